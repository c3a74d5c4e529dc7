//! `kith experiment device-calibration`: how this machine's media answer sequential and
//! random reads (Bondhu's thesis calibrated its disk the same way, §3.2, before pricing
//! layouts by pages read). fio reads one file per medium: sequentially in 1 MiB and 4 KiB
//! requests and at random in 4 KiB requests, one request at a time, with O_DIRECT on the
//! disk so that the guest's page cache is out of the way (tmpfs has no O_DIRECT: its pages
//! are the medium). Beside each pattern stands what kith's HDD and SSD models predict for
//! the same reads, the models the store experiments replay their traces through.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail, ensure};
use clap::Args;
use kith_store::{DeviceModel, DeviceRead, Head};
use rand::{Rng, SeedableRng};
use serde_json::Value;

use super::bondhu::{progress, write_csv};
use crate::plot::bar_chart;
use crate::say;

#[derive(Debug, Args)]
pub struct DeviceArgs {
    /// Media: `disk` (a file under --out) and `tmpfs` (/dev/shm).
    #[arg(long, value_delimiter = ',', default_value = "disk,tmpfs")]
    pub media: Vec<String>,
    /// The size of the file read on each medium, MiB (larger than any cache in the way
    /// makes the disk's numbers its own).
    #[arg(long, default_value_t = 1024)]
    pub size_mb: u64,
    /// Seconds per pattern.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Output directory: device-calibration.csv and device-calibration.png.
    #[arg(long)]
    pub out: PathBuf,
}

/// A read pattern: fio's `rw` and block size.
const PATTERNS: [(&str, &str, u64); 3] = [
    ("sequential 1 MiB", "read", 1 << 20),
    ("sequential 4 KiB", "read", 4096),
    ("random 4 KiB", "randread", 4096),
];

struct Measured {
    medium: String,
    pattern: &'static str,
    bs: u64,
    mb_s: f64,
    iops: f64,
    p50_us: f64,
    p99_us: f64,
    hdd_mb_s: f64,
    ssd_mb_s: f64,
}

pub(super) fn run(args: &DeviceArgs) -> Result<()> {
    ensure!(args.size_mb >= 1, "--size-mb must be at least 1");
    ensure!((1..=600).contains(&args.seconds), "--seconds must be 1 to 600");
    let fio = Command::new("fio").arg("--version").output();
    if !fio.is_ok_and(|o| o.status.success()) {
        bail!("fio not found: install Debian's fio (scripts/bench-deps.sh does)");
    }
    let media: Vec<(String, PathBuf, bool)> = args
        .media
        .iter()
        .map(|m| match m.as_str() {
            "disk" => Ok((m.clone(), args.out.join("fio-scratch"), true)),
            "tmpfs" => Ok((m.clone(), PathBuf::from("/dev/shm"), false)),
            other => bail!("unknown medium {other}: disk or tmpfs"),
        })
        .collect::<Result<_>>()?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let bar = progress(media.len() * PATTERNS.len(), "device-calibration");
    let mut rows = Vec::new();
    for (medium, dir, direct) in &media {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let file = dir.join(format!("kith-calibration-{}.dat", std::process::id()));
        let result = (|| -> Result<()> {
            for &(pattern, rw, bs) in &PATTERNS {
                bar.set_message(format!("{medium}: {pattern}"));
                let job = fio_job(&file, rw, bs, *direct, args)?;
                let (hdd_mb_s, ssd_mb_s) = models(rw, bs, args.size_mb << 20);
                rows.push(Measured {
                    medium: medium.clone(),
                    pattern,
                    bs,
                    mb_s: job["read"]["bw_bytes"].as_f64().unwrap_or(0.0) / 1e6,
                    iops: job["read"]["iops"].as_f64().unwrap_or(0.0),
                    p50_us: percentile(&job, "50.000000"),
                    p99_us: percentile(&job, "99.000000"),
                    hdd_mb_s,
                    ssd_mb_s,
                });
                bar.inc(1);
            }
            Ok(())
        })();
        let _ = std::fs::remove_file(&file);
        result?;
    }
    bar.finish_and_clear();
    let _ = std::fs::remove_dir(args.out.join("fio-scratch"));
    write(args, &rows)
}

/// Runs one fio job on `file` and returns its JSON job.
fn fio_job(file: &Path, rw: &str, bs: u64, direct: bool, args: &DeviceArgs) -> Result<Value> {
    let output = Command::new("fio")
        .args(["--name=kith-calibration", "--ioengine=psync", "--iodepth=1", "--numjobs=1"])
        .arg(format!("--filename={}", file.display()))
        .arg(format!("--size={}M", args.size_mb))
        .arg(format!("--rw={rw}"))
        .arg(format!("--bs={bs}"))
        .arg(format!("--direct={}", u8::from(direct)))
        .arg(format!("--runtime={}s", args.seconds))
        .args(["--time_based", "--randrepeat=1", "--invalidate=1", "--output-format=json"])
        .output()
        .context("running fio")?;
    if !output.status.success() {
        bail!(
            "fio --rw={rw} --bs={bs} on {} failed: {}",
            file.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&output.stdout);
    // fio may print notes before the JSON document.
    let start = text.find('{').context("fio printed no JSON")?;
    // Only the first JSON value: fio may print notes after it too.
    let doc: Value = serde_json::Deserializer::from_str(&text[start..])
        .into_iter::<Value>()
        .next()
        .context("fio printed no JSON")?
        .context("fio's JSON")?;
    doc["jobs"][0].as_object().context("fio's JSON has no job")?;
    Ok(doc["jobs"][0].clone())
}

fn percentile(job: &Value, p: &str) -> f64 {
    job["read"]["clat_ns"]["percentile"][p].as_f64().unwrap_or(f64::NAN) / 1e3
}

/// MB/s the HDD and SSD models give for 2,000 reads of the pattern over a file of `size`
/// bytes (random offsets seeded, aligned to the block).
fn models(rw: &str, bs: u64, size: u64) -> (f64, f64) {
    let blocks = (size / bs).max(1);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
    let reads: Vec<DeviceRead> = (0..2000u64)
        .map(|i| {
            let block = if rw == "randread" { rng.random_range(0..blocks) } else { i % blocks };
            DeviceRead { file: "calibration".into(), address: block * bs, len: bs, at_us: 0.0 }
        })
        .collect();
    let bytes = 2000.0 * bs as f64;
    let mb_s = |model: &str| {
        let model: DeviceModel = model.parse().expect("a known model");
        let ms = model.replay(&reads, &mut Head::default());
        bytes / 1e6 / (ms / 1e3)
    };
    (mb_s("hdd"), mb_s("ssd"))
}

fn write(args: &DeviceArgs, rows: &[Measured]) -> Result<()> {
    let mut csv = String::from(
        "medium,pattern,bs,mb_per_s,iops,p50_us,p99_us,hdd_model_mb_per_s,ssd_model_mb_per_s,\
         sequential_over_random\n",
    );
    for r in rows {
        // Sequential 1 MiB bandwidth over random 4 KiB bandwidth on the same medium.
        let random = rows
            .iter()
            .find(|x| x.medium == r.medium && x.pattern == "random 4 KiB")
            .map_or(f64::NAN, |x| x.mb_s);
        let ratio = if r.pattern == "sequential 1 MiB" { r.mb_s / random } else { f64::NAN };
        csv.push_str(&format!(
            "{},{},{},{:.2},{:.1},{:.1},{:.1},{:.2},{:.2},{}\n",
            r.medium,
            r.pattern,
            r.bs,
            r.mb_s,
            r.iops,
            r.p50_us,
            r.p99_us,
            r.hdd_mb_s,
            r.ssd_mb_s,
            if ratio.is_nan() { String::new() } else { format!("{ratio:.1}") }
        ));
    }
    let csv_path = args.out.join("device-calibration.csv");
    write_csv(&csv_path, &csv)?;
    let groups: Vec<String> = PATTERNS.iter().map(|p| p.0.to_owned()).collect();
    let mut bars: Vec<String> = args.media.clone();
    bars.extend(["HDD model".to_owned(), "SSD model".to_owned()]);
    let values: Vec<Vec<f64>> = PATTERNS
        .iter()
        .map(|&(pattern, _, _)| {
            let of = |m: &str| rows.iter().find(|r| r.medium == m && r.pattern == pattern);
            let mut v: Vec<f64> = args
                .media
                .iter()
                .map(|m| of(m).map_or(0.0, |r| r.mb_s.max(1e-3).log10()))
                .collect();
            let first = rows.iter().find(|r| r.pattern == pattern);
            v.push(first.map_or(0.0, |r| r.hdd_mb_s.log10()));
            v.push(first.map_or(0.0, |r| r.ssd_mb_s.log10()));
            v
        })
        .collect();
    bar_chart(
        &args.out.join("device-calibration.png"),
        "Reads one request at a time: measured media and the models",
        "log10 MB/s",
        &groups,
        &bars,
        &values,
    )?;
    say!("{csv}");
    eprintln!("wrote {} and device-calibration.png", csv_path.display());
    Ok(())
}
