//! Files built to hurt the loader: a line without end, archive members far larger than
//! memory allows. Each is refused clearly or read in bounded memory; the members are read in
//! a child process whose address space is limited (`prlimit --as`), so holding one whole
//! fails there.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use flate2::Compression;
use flate2::write::GzEncoder;
use kith_graph::{LoadConfig, load};

/// Bytes of comment lines in each big member: more than the child may map.
const MEMBER_BYTES: usize = 400 << 20;
/// The child's address-space limit.
const CHILD_AS_BYTES: &str = "300000000";

/// Writes `MEMBER_BYTES` of comment lines, then the edge `1 2`, into `out`.
fn comments_then_one_edge(out: &mut impl Write) {
    let line = format!("# {}\n", "x".repeat(1021));
    let block = line.repeat(1024);
    for _ in 0..MEMBER_BYTES / block.len() {
        out.write_all(block.as_bytes()).unwrap();
    }
    out.write_all(b"1 2\n").unwrap();
}

/// Runs the test `name` of this binary again in a child limited to `CHILD_AS_BYTES` of
/// address space, with `KITH_HOSTILE_FILE` set to `file`; returns its output.
fn in_small_child(name: &str, file: &Path) -> String {
    let out = Command::new("prlimit")
        .arg(format!("--as={CHILD_AS_BYTES}"))
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env("KITH_HOSTILE_FILE", file)
        .env("MALLOC_ARENA_MAX", "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the child failed ({}): {text}", out.status);
    text
}

/// In the child: loads the file and prints what it found.
fn child_loads() -> bool {
    let Ok(file) = std::env::var("KITH_HOSTILE_FILE") else { return false };
    match load(Path::new(&file), &LoadConfig::default()) {
        Ok(g) => println!("loaded {} nodes {} edges", g.num_nodes(), g.num_edges()),
        Err(e) => println!("refused: {e}"),
    }
    true
}

#[test]
fn a_line_without_end_is_refused_by_its_number() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.txt");
    let mut text = b"1 2\n2 3\n".to_vec();
    text.extend(std::iter::repeat_n(b'7', 5 << 20));
    std::fs::write(&path, &text).unwrap();
    let err = load(&path, &LoadConfig::default()).unwrap_err().to_string();
    assert!(
        err.ends_with("e.txt:3: line is longer than 1048576 bytes; an edge list has short lines"),
        "{}",
        &err[..err.len().min(300)]
    );
    // The same in a CSV file, whose header row is read on its own.
    let path = dir.path().join("e.csv");
    let mut text = b"from,to".to_vec();
    text.extend(std::iter::repeat_n(b'x', 3 << 20));
    std::fs::write(&path, &text).unwrap();
    let err = load(&path, &LoadConfig::default()).unwrap_err().to_string();
    assert!(
        err.ends_with("e.csv:1: line is longer than 1048576 bytes; an edge list has short lines"),
        "{}",
        &err[..err.len().min(300)]
    );
}

#[test]
fn a_huge_zip_member_is_streamed() {
    if child_loads() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.zip");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    zip.start_file("edges.txt", options).unwrap();
    comments_then_one_edge(&mut zip);
    zip.finish().unwrap();
    let text = in_small_child("a_huge_zip_member_is_streamed", &path);
    assert!(text.contains("loaded 2 nodes 1 edges"), "{text}");
}

#[test]
fn a_huge_ego_network_member_is_streamed() {
    if child_loads() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facebook.tar.gz");
    let gz = GzEncoder::new(std::fs::File::create(&path).unwrap(), Compression::fast());
    let mut tar = tar::Builder::new(gz);
    let mut header = tar::Header::new_gnu();
    // The member is written through a pipe of its own size: streamed into the archive.
    header.set_size((MEMBER_BYTES / (1024 * 1024) * (1024 * 1024) + 4) as u64);
    header.set_mode(0o644);
    header.set_cksum();
    let (reader, mut writer) = std::io::pipe().unwrap();
    let feeder = std::thread::spawn(move || comments_then_one_edge(&mut writer));
    tar.append_data(&mut header, "facebook/0.edges", reader).unwrap();
    feeder.join().unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    let text = in_small_child("a_huge_ego_network_member_is_streamed", &path);
    // Ego 0's network: the edge 1-2 of its .edges member (no .feat member).
    assert!(text.contains("loaded 2 nodes 1 edges"), "{text}");
}
