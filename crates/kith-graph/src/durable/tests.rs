//! Power-loss tests of [`write_atomic`] and of the writers that use it: at every step the
//! target is the complete old file or the complete new one, and the reader accepts it. The
//! same check catches the unsafe sequences (writing in place, renaming before the fsync,
//! skipping the directory's fsync).

use std::io::Write;
use std::path::Path;

use super::*;
use crate::graph::Graph;
use crate::load::{LoadConfig, load};

fn graph(n: u64, shift: u64) -> Graph {
    let edges = (0..n as u32 - 1).map(|i| (i, (i * 7 + 1 + shift as u32) % n as u32));
    let edges = edges.filter(|(a, b)| a != b).collect();
    Graph::from_edges((0..n).map(|i| i * 3 + shift).collect(), false, edges)
}

/// Checks replacing `name` (old graph by new graph) with power lost at every step; the reader
/// must load exactly one of the two graphs.
fn check_graph_file(name: &str) -> Result<u64, String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    // Big enough to take several 4 KiB write calls.
    let (old, new) = (graph(3000, 0), graph(2500, 1));
    let save_old = |fs: &dyn Fs| crate::save_with(fs, &old, &path).map_err(std::io::Error::other);
    let save_new = |fs: &dyn Fs| crate::save_with(fs, &new, &path).map_err(std::io::Error::other);
    // What the reader makes of each file written whole (text drops isolated vertices).
    let reference = |g: &Graph, tag: &str| {
        let p = dir.path().join(format!("{tag}-{name}"));
        crate::save(g, &p).unwrap();
        load(&p, &LoadConfig::default()).unwrap()
    };
    let (old_read, new_read) = (reference(&old, "old"), reference(&new, "new"));
    let accept = |p: &Path| -> Result<(), String> {
        let g = load(p, &LoadConfig::default()).map_err(|e| e.to_string())?;
        let same = |h: &Graph| g.original_ids() == h.original_ids() && g.out_csr() == h.out_csr();
        if same(&old_read) || same(&new_read) { Ok(()) } else { Err("loaded a third graph".into()) }
    };
    PowerCutFs::check_every_cut(&path, Some(&save_old), &save_new, &accept)
}

#[test]
fn snapshots_survive_power_loss_at_every_step() {
    let cuts = check_graph_file("g.kgraph").unwrap();
    assert!(cuts > 10, "only {cuts} cut points");
}

#[test]
fn edge_lists_survive_power_loss_at_every_step() {
    for name in ["g.txt", "g.csv.gz"] {
        check_graph_file(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn a_first_write_is_absent_or_complete() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.cmty.txt");
    let new = |fs: &dyn Fs| write_atomic(fs, &path, |w| w.write_all(&[b'7'; 10_000]));
    let accept = |p: &Path| match std::fs::read(p) {
        Ok(b) if b == [b'7'; 10_000] => Ok(()),
        other => Err(format!("{other:?}")),
    };
    PowerCutFs::check_every_cut(&path, None, &new, &accept).unwrap();
}

/// The sequences `write_atomic` avoids each lose or tear the file at some cut point.
#[test]
fn unsafe_sequences_are_caught() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let tmp = temp_path(&path);
    let bytes = |b: u8| vec![b; 9000];
    let old = |fs: &dyn Fs| write_atomic(fs, &path, |w| w.write_all(&bytes(1)));
    let accept = |_: &Path| Ok(());
    // Truncating and writing in place, as `File::create` on the target does.
    let in_place = |fs: &dyn Fs| {
        let mut f = fs.create(&path)?;
        f.write_all(&bytes(2))?;
        f.sync_all()
    };
    // Renaming before the file's bytes are synced.
    let rename_first = |fs: &dyn Fs| {
        let mut f = fs.create(&tmp)?;
        f.write_all(&bytes(2))?;
        fs.rename(&tmp, &path)?;
        f.sync_all()?;
        fs.sync_dir(dir.path())
    };
    // Never syncing the directory, so the rename may be lost after the write returned.
    let no_dir_sync = |fs: &dyn Fs| {
        let mut f = fs.create(&tmp)?;
        f.write_all(&bytes(2))?;
        f.sync_all()?;
        fs.rename(&tmp, &path)
    };
    let unsafe_writers: [(&str, &FileWriter<'_>); 3] =
        [("in place", &in_place), ("rename first", &rename_first), ("no dir sync", &no_dir_sync)];
    for (name, writer) in unsafe_writers {
        let result = PowerCutFs::check_every_cut(&path, Some(&old), writer, &accept);
        assert!(result.is_err(), "{name}: not caught");
    }
    let safe = |fs: &dyn Fs| write_atomic(fs, &path, |w| w.write_all(&bytes(2)));
    PowerCutFs::check_every_cut(&path, Some(&old), &safe, &accept).unwrap();
}
