//! A full disk under the store: a 16 MiB tmpfs mounted by the test holds the store, and data
//! blocks are written until the disk is full. The failing write must fail with a clear error
//! (not a panic or a hang), every acknowledged write must be there after a reopen, and once
//! space returns (the tmpfs remounted bigger) writes must succeed again.
//!
//! RocksDB stops accepting writes after a WAL append fails (a hard background error) and
//! recovers by itself: its SstFileManager polls the free space every 5 s and resumes the
//! database once at least one write buffer (64 MiB) is free. The test waits for that without
//! reopening the store, then checks everything again after a reopen.
//!
//! Mounting needs root (or `CAP_SYS_ADMIN`); where it is refused the test prints why and
//! passes without running.

use std::time::{Duration, Instant};

use kith_store::testing::Tmpfs;
use kith_store::{BuildOptions, DataSpec, Error, LayoutMeta, OpenOptions, Store};

/// The data block of `uid` at `version`: 256 KiB, different for every version.
fn block(uid: u64, version: u64) -> Vec<u8> {
    let mut b = vec![(uid as u8) ^ (version as u8); 256 << 10];
    b[..8].copy_from_slice(&version.to_le_bytes());
    b
}

fn is_disk_full(e: &Error) -> bool {
    matches!(e, Error::DiskFull { .. })
}

/// Every acknowledged block is the current one of its user.
fn check_acked(store: &Store, acked: &[Option<u64>]) {
    for (uid, version) in acked.iter().enumerate() {
        if let Some(v) = version {
            let got = store.get_data(uid as u64 + 1, None).unwrap();
            assert!(
                got == block(uid as u64 + 1, *v),
                "user {}: acknowledged version {v} lost",
                uid + 1
            );
        }
    }
}

#[test]
fn a_full_disk_fails_writes_clearly_and_loses_nothing() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipping the full-disk test: mounting a tmpfs needs root");
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let tmpfs = match Tmpfs::mount(&scratch.path().join("mnt"), "16m") {
        Ok(t) => t,
        Err(why) => {
            println!("skipping the full-disk test: mounting a tmpfs was refused: {why}");
            return;
        }
    };
    let dir = tmpfs.path().join("store");
    let graph = kith_layout::paper_example();
    let layout = kith_layout::Layout::identity(graph.num_nodes());
    let options = BuildOptions { data: DataSpec::Fixed(100), ..BuildOptions::default() };
    drop(kith_store::build(&dir, &graph, &layout, LayoutMeta::default(), &options).unwrap());
    let store = Store::open(&dir, &OpenOptions::default()).unwrap();

    // Fill the disk: 16 MiB holds fewer than 64 blocks of 256 KiB.
    let mut acked: Vec<Option<u64>> = vec![None; 7];
    let mut version = 0u64;
    let err = loop {
        version += 1;
        assert!(version < 200, "the disk never filled");
        let uid = version % 7 + 1;
        match store.put_data(uid, &block(uid, version)) {
            Ok(()) => acked[uid as usize - 1] = Some(version),
            Err(e) => break e,
        }
    };
    let message = err.to_string();
    println!("the write at version {version} failed: {message}");
    assert!(is_disk_full(&err), "not a DiskFull error: {err:?}");
    assert!(message.contains("disk full") || message.contains("no space"), "{message}");
    // Reads still work and show every acknowledged write.
    check_acked(&store, &acked);

    // Space returns: writes succeed again without a reopen, within RocksDB's 5 s polling.
    tmpfs.resize("256m");
    let freed = Instant::now();
    loop {
        version += 1;
        let uid = version % 7 + 1;
        match store.put_data(uid, &block(uid, version)) {
            Ok(()) => {
                acked[uid as usize - 1] = Some(version);
                break;
            }
            Err(e) => {
                assert!(is_disk_full(&e), "{e:?}");
                assert!(
                    freed.elapsed() < Duration::from_secs(30),
                    "no write succeeded 30 s after space returned: {e}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    println!("writes resumed {:?} after space returned, without a reopen", freed.elapsed());
    check_acked(&store, &acked);
    drop(store);
    let store = Store::open(&dir, &OpenOptions::default()).unwrap();
    check_acked(&store, &acked);
    assert!(store.verify().unwrap().ok(), "verify after the full disk");
    for uid in 1..=7 {
        version += 1;
        store.put_data(uid, &block(uid, version)).unwrap();
        acked[uid as usize - 1] = Some(version);
    }
    drop(store);
    let store = Store::open(&dir, &OpenOptions::default()).unwrap();
    check_acked(&store, &acked);
}
