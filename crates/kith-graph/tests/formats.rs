//! Each input format, with the quirks SOURCES.md warns about, and every kind of bad input.

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;
use kith_graph::{Format, Graph, LoadConfig, Result, load};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write test file");
    path
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn undirected(path: &Path) -> Result<Graph> {
    load(path, &LoadConfig::default())
}

fn edges(g: &Graph) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for u in 0..g.num_nodes() as u32 {
        for &v in g.neighbors(u) {
            if g.is_directed() || u < v {
                out.push((g.original_id(u), g.original_id(v)));
            }
        }
    }
    out
}

fn error(path: &Path, config: &LoadConfig) -> String {
    load(path, config).expect_err("should fail").to_string()
}

#[test]
fn snap_quirks_crlf_tabs_trailing_spaces_blank_lines_no_final_newline() -> Result<()> {
    let dir = tempfile::tempdir().unwrap();
    let text = b"# Directed graph\r\n# FromNodeId\tToNodeId\r\n\r\n10\t20\r\n20 \t 30  \r\n  30\t10\t\r\n\n30\t30\r\n40\t10";
    let plain = write(dir.path(), "g.txt", text);
    let gz = write(dir.path(), "g.txt.gz", &gzip(text));
    let g = undirected(&plain)?;
    assert_eq!(edges(&g), vec![(10, 20), (10, 30), (10, 40), (20, 30)]);
    assert_eq!(g.cleaning().self_loops_dropped, 1);
    assert_eq!(undirected(&gz)?, g);
    let d = load(&plain, &LoadConfig { directed: true, ..Default::default() })?;
    assert_eq!(edges(&d), vec![(10, 20), (20, 30), (30, 10), (40, 10)]);
    Ok(())
}

#[test]
fn concatenated_gzip_members_are_one_stream() -> Result<()> {
    let dir = tempfile::tempdir().unwrap();
    let bytes = [gzip(b"1 2\n"), gzip(b"2 3\n")].concat();
    let path = write(dir.path(), "multi.txt.gz", &bytes);
    assert_eq!(undirected(&path)?.num_edges(), 2);
    Ok(())
}

#[test]
fn konect_skips_percent_comments_and_extra_columns() -> Result<()> {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "out.test",
        b"% asym unweighted\n% 3 3 3\n1 2 1 1234567890 \n2 3 1 1234567891 \n3 1 \n",
    );
    let g = load(&path, &LoadConfig { directed: true, ..Default::default() })?;
    assert_eq!(edges(&g), vec![(1, 2), (2, 3), (3, 1)]);
    Ok(())
}

#[test]
fn matrix_market_with_and_without_banner() -> Result<()> {
    let dir = tempfile::tempdir().unwrap();
    let with = write(
        dir.path(),
        "a.mtx",
        b"%%MatrixMarket matrix coordinate pattern symmetric\n% comment\n4 4 3\n2 1\n3 1\n4 3\n",
    );
    let without = write(dir.path(), "b.mtx", b"\n2 1\n3 1\n4 3\n");
    assert_eq!(edges(&undirected(&with)?), vec![(1, 2), (1, 3), (3, 4)]);
    assert_eq!(undirected(&with)?, undirected(&without)?);
    let real = write(
        dir.path(),
        "c.mtx",
        b"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 0.5\n2 3 1e-3\n",
    );
    assert_eq!(undirected(&real)?.num_edges(), 2);
    Ok(())
}

#[test]
fn csv_with_header_row_and_sniffed_without_extension() -> Result<()> {
    let dir = tempfile::tempdir().unwrap();
    let with_header = write(dir.path(), "e.csv", b"id_1,id_2\n0,23977\n1,34526\n");
    assert_eq!(edges(&undirected(&with_header)?), vec![(0, 23977), (1, 34526)]);
    let headerless = write(dir.path(), "e2.csv", b"0,23977\n1,34526\n");
    assert_eq!(undirected(&headerless)?, undirected(&with_header)?);
    let sniffed = write(dir.path(), "edges.data", b"source,target\n0,23977\n1,34526\n");
    assert_eq!(undirected(&sniffed)?, undirected(&with_header)?);
    Ok(())
}

#[test]
fn forced_format_overrides_detection() -> Result<()> {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "edges.mtx", b"1 2\n2 3\n");
    let config = LoadConfig { format: Some(Format::Snap), ..Default::default() };
    assert_eq!(load(&path, &config)?.num_edges(), 2);
    Ok(())
}

#[test]
fn zip_member_is_picked_or_named() -> Result<()> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.zip");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, body) in [
        ("g/README.txt", &b"not edges"[..]),
        ("g/my_edges.csv", b"a,b\n1,2\n"),
        ("g/other.txt", b"5 6\n6 7\n"),
    ] {
        zip.start_file(name, opts).unwrap();
        zip.write_all(body).unwrap();
    }
    zip.finish().unwrap();
    assert_eq!(edges(&undirected(&path)?), vec![(1, 2)]);
    let named = LoadConfig { member: Some("g/other.txt".into()), ..Default::default() };
    assert_eq!(load(&path, &named)?.num_edges(), 2);
    let missing = LoadConfig { member: Some("nope".into()), ..Default::default() };
    assert!(error(&path, &missing).contains("no member \"nope\""));
    let plain = write(dir.path(), "plain.txt", b"1 2\n");
    assert!(error(&plain, &named).contains("not a zip archive"));
    Ok(())
}

#[test]
fn ego_archive_adds_ego_to_member_edges() -> Result<()> {
    let dir = tempfile::tempdir().unwrap();
    let mut tar = tar::Builder::new(Vec::new());
    for (name, body) in [
        ("ego/0.edges", &b"1 2\n2 1\n"[..]),
        ("ego/0.feat", b"1 0 1\n2 1 0\n3 0 0\n"),
        ("ego/0.circles", b"c1\t1\t2\n"),
    ] {
        let mut header = tar::Header::new_gnu();
        header.set_size(body.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, name, body).unwrap();
    }
    let path = write(dir.path(), "ego.tar.gz", &gzip(&tar.into_inner().unwrap()));
    assert_eq!(edges(&undirected(&path)?), vec![(0, 1), (0, 2), (0, 3), (1, 2)]);
    Ok(())
}

#[test]
fn bad_lines_name_file_line_and_text() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8], &str); 6] = [
        (
            "wiki.txt",
            b"# c\n1 2\n12 abc\n",
            r#"wiki.txt:3: expected two integer ids, found "12 abc""#,
        ),
        ("one.txt", b"1 2\n3\n", r#"one.txt:2: expected two integer ids, found "3""#),
        ("neg.txt", b"1 2\n-4 5\n", "neg.txt:2: negative id"),
        (
            "big.txt",
            b"18446744073709551616 1\n",
            "big.txt:1: id beyond the largest supported id 18446744073709551615",
        ),
        ("c.csv", b"a,b\n1,2\n1;2\n", "c.csv:3: expected two integer ids"),
        (
            "m.mtx",
            b"%%MatrixMarket matrix coordinate pattern general\n2 2 1\n0 1\n",
            "m.mtx:3: id 0 outside 1..=2",
        ),
    ];
    for (name, body, want) in cases {
        let path = write(dir.path(), name, body);
        let got = error(&path, &LoadConfig::default());
        assert!(got.contains(&format!("/{want}")), "{got:?} lacks {want:?}");
    }
    // The line number survives gzip and chunking: a bad line far into a large file.
    let mut big: Vec<u8> =
        (0..300_000).flat_map(|i| format!("{i}\t{}\n", i + 1).into_bytes()).collect();
    big.extend_from_slice(b"7 x7\n");
    let path = write(dir.path(), "late.txt.gz", &gzip(&big));
    assert!(
        error(&path, &LoadConfig::default())
            .ends_with(r#"late.txt.gz:300001: expected two integer ids, found "7 x7""#)
    );
}

#[test]
fn unusable_files_get_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = LoadConfig::default();
    let mut good: Vec<u8> =
        (0..100_000).flat_map(|i| format!("{i} {}\n", i + 1).into_bytes()).collect();
    good = gzip(&good);
    let truncated = write(dir.path(), "t.txt.gz", &good[..good.len() / 2]);
    assert!(error(&truncated, &cfg).contains("compressed stream is truncated or corrupt"));
    let empty = write(dir.path(), "e.txt", b"");
    assert!(error(&empty, &cfg).ends_with("e.txt: empty file"));
    let comments = write(dir.path(), "c.txt", b"# nothing\n\n");
    assert!(error(&comments, &cfg).contains("no edges found"));
    assert!(error(&dir.path().join("absent.txt"), &cfg).ends_with("absent.txt: no such file"));
    assert!(error(dir.path(), &cfg).contains("is a directory"));
    let fake = write(dir.path(), "f.kgraph", b"this is not a snapshot at all");
    assert!(error(&fake, &cfg).contains("not a .kgraph snapshot"));
    let zip = write(dir.path(), "z.zip", b"PK\x03\x04 broken");
    assert!(error(&zip, &cfg).contains("not a readable zip archive"));
}

#[test]
fn damaged_snapshots_are_refused() -> Result<()> {
    let dir = tempfile::tempdir().unwrap();
    let text = write(dir.path(), "g.txt", b"1 2\n2 3\n3 1\n");
    let path = dir.path().join("g.kgraph");
    kith_graph::save(&undirected(&text)?, &path)?;
    let good = std::fs::read(&path).unwrap();
    let mut body = good.clone();
    let last = body.len() - 5;
    body[last] ^= 0x40;
    std::fs::write(&path, &body).unwrap();
    assert!(error(&path, &LoadConfig::default()).contains("body checksum mismatch"));
    let mut version = good.clone();
    version[8..12].copy_from_slice(&2u32.to_le_bytes());
    std::fs::write(&path, &version).unwrap();
    assert!(
        error(&path, &LoadConfig::default())
            .contains("unsupported .kgraph version 2 (this kith reads version 1)")
    );
    std::fs::write(&path, &good).unwrap();
    let directed = LoadConfig { directed: true, ..Default::default() };
    assert!(error(&path, &directed).contains("undirected graph"));
    Ok(())
}

/// A large file with every quirk mixed in, cut into many chunks by the parallel reader, gives
/// the graph a naive line-by-line parse gives.
#[test]
fn chunked_parallel_parse_equals_naive_parse() -> Result<()> {
    let mut text = Vec::new();
    let mut want = std::collections::BTreeSet::new();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..1_200_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let (u, v) = (x % 50_000, (x >> 20) % 50_000);
        match i % 97 {
            0 => text.extend_from_slice(b"# a comment line\n"),
            1 => text.extend_from_slice(b"\r\n"),
            _ => {}
        }
        let line = match i % 3 {
            0 => format!("{u}\t{v}\r\n"),
            1 => format!("  {u} {v} 1 1234567\n"),
            _ => format!("{u}\t{v}  \n"),
        };
        text.extend_from_slice(line.as_bytes());
        if u != v {
            want.insert((u.min(v), u.max(v)));
        }
    }
    assert!(text.len() > 12 << 20, "several 4 MiB chunks");
    let dir = tempfile::tempdir().unwrap();
    for name in ["big.txt", "big.txt.gz"] {
        let bytes = if name.ends_with(".gz") { gzip(&text) } else { text.clone() };
        let g = undirected(&write(dir.path(), name, &bytes))?;
        let got: std::collections::BTreeSet<(u64, u64)> = edges(&g).into_iter().collect();
        assert_eq!(got, want, "{name}");
    }
    Ok(())
}

/// Every chunk bad: all parser threads fail at once, and the load still ends with the first
/// bad line rather than hanging.
#[test]
fn errors_in_every_chunk_end_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let text: Vec<u8> = (0..2_000_000).flat_map(|i| format!("{i} x\n").into_bytes()).collect();
    let path = write(dir.path(), "garbage.txt", &text);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(error(&path, &LoadConfig::default())));
    let message = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("load hung");
    assert!(message.contains("garbage.txt:"), "{message}");
    assert!(message.contains("expected two integer ids"), "{message}");
}
