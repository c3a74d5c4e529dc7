//! `kith serve --cache write-back`: no acknowledged post is lost to kill -9, and a SIGTERM
//! flushes the journal and exits cleanly.

mod common;

use std::time::Duration;

use common::Server;
use common::service::{body, client, store};
use kith_store::testing::Tmpfs;
use reqwest::blocking::Client;
use serde_json::{Value, json};

#[test]
fn write_back_loses_no_acknowledged_post_on_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "50");
    let mut acked: Vec<(u64, String)> = Vec::new();
    // kill -9 rounds, then one SIGTERM; KITH_CRASH_ROUNDS runs a longer test.
    let kills: u64 =
        std::env::var("KITH_CRASH_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(3);
    for round in 0..=kills {
        // A long flush interval keeps most acknowledged posts only in the journal.
        let mut server =
            Server::start(&store, &["--cache", "write-back", "--flush-interval-ms", "700"]);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = (0..4u64)
            .map(|w| {
                let (url, stop) = (server.url("/posts"), stop.clone());
                std::thread::spawn(move || {
                    let http = Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
                    let mut mine = Vec::new();
                    let mut i = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let content = format!("r{round} w{w} #{i}");
                        i += 1;
                        let Ok(r) =
                            http.post(&url).json(&json!({"author": w, "content": content})).send()
                        else {
                            break;
                        };
                        if r.status().as_u16() != 201 {
                            break;
                        }
                        let Ok(v) = r.json::<Value>() else { break };
                        mine.push((v["id"].as_u64().unwrap(), content));
                    }
                    mine
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(400 + 150 * (round % 5)));
        let last = round == kills;
        // kill -9 in the middle of the stream; the last round stops with SIGTERM instead,
        // which must flush the journal and exit cleanly.
        let status = server.signal(if last { "-TERM" } else { "-KILL" });
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for w in writers {
            acked.extend(w.join().unwrap());
        }
        if last {
            assert!(status.success(), "SIGTERM exit: {status}");
            let left: Vec<_> = std::fs::read_dir(store.join("feed-journal")).unwrap().collect();
            assert_eq!(left.len(), 1, "a clean shutdown leaves only the fresh, empty segment");
        }
    }
    assert!(acked.len() > 100, "only {} posts acknowledged", acked.len());
    let server = Server::start(&store, &["--cache", "none"]);
    let http = client();
    for (id, content) in &acked {
        let (s, r) = body(http.get(server.url(&format!("/posts/{id}"))).send().unwrap());
        assert_eq!((s, r["content"].as_str().unwrap_or("")), (200, content.as_str()), "post {id}");
    }
    eprintln!(
        "{} acknowledged posts, all readable after {kills} kill -9 and a SIGTERM",
        acked.len()
    );
}

/// What a crash can leave at the end of the journal: zeros where unsynced bytes were. The
/// server starts, with every acknowledged post.
#[test]
fn a_zero_filled_journal_tail_does_not_stop_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "50");
    // Flushes rarely, so the posts are still only in the journal at the kill.
    let args = ["--cache", "write-back", "--flush-interval-ms", "100000"];
    let mut server = Server::start(&store, &args);
    let http = client();
    let mut acked = Vec::new();
    for i in 0..5 {
        let r =
            http.post(server.url("/posts")).json(&json!({"author": 1, "content": format!("z{i}")}));
        let (s, v) = body(r.send().unwrap());
        assert_eq!(s, 201, "{v}");
        acked.push(v["id"].as_u64().unwrap());
    }
    server.signal("-KILL");
    let journal = store.join("feed-journal");
    let mut segments: Vec<_> =
        std::fs::read_dir(&journal).unwrap().map(|e| e.unwrap().path()).collect();
    segments.sort();
    let newest = segments.last().unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(newest).unwrap();
    std::io::Write::write_all(&mut f, &[0; 512]).unwrap();
    drop(f);
    let server = Server::start(&store, &["--cache", "write-back"]);
    for id in acked {
        let (s, v) = body(http.get(server.url(&format!("/posts/{id}"))).send().unwrap());
        assert_eq!(s, 200, "post {id}: {v}");
    }
}

/// `kith bench feed-crash`, short: a few SIGKILLs under mixed writes, every acknowledged
/// post, follow, friendship and profile checked after each restart.
#[test]
fn feed_crash_trial_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("feed-crash.json");
    let kills = std::env::var("KITH_FEED_CRASH_KILLS").unwrap_or_else(|_| "3".into());
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_kith"))
        .args(["bench", "feed-crash", "--kills", &kills, "--users", "60", "--max-run-ms", "600"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "feed-crash failed: {stderr}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(report["acknowledged"]["posts"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(report["lost"]["posts"], 0, "{report}");
    assert_eq!(report["server_errors"], 0, "{report}");
}

/// The journal's disk fills up under `kith serve --cache write-back`: posts are refused
/// (never acknowledged), nothing acknowledged is lost, and once space returns posts are
/// taken again without a restart.
#[test]
fn a_full_journal_disk_refuses_posts_until_space_returns() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "50");
    let journal = store.join("feed-journal");
    std::fs::create_dir_all(&journal).unwrap();
    let _disk = match Tmpfs::mount(&journal, "256k") {
        Ok(m) => m,
        Err(why) => {
            eprintln!("skipped: cannot mount a tmpfs ({why})");
            return;
        }
    };
    let args = ["--cache", "write-back", "--flush-interval-ms", "100000"];
    let mut server = Server::start(&store, &args);
    let http = client();
    let post = |server: &Server, content: String| {
        body(
            http.post(server.url("/posts"))
                .json(&json!({"author": 1, "content": content}))
                .send()
                .unwrap(),
        )
    };
    let (s, first) = post(&server, "before".into());
    assert_eq!(s, 201, "{first}");
    // Fills the disk.
    let ballast = journal.join("ballast");
    let mut f = std::fs::File::create(&ballast).unwrap();
    while std::io::Write::write_all(&mut f, &[7; 512]).is_ok() {}
    drop(f);
    let (s, refused) = post(&server, "x".repeat(20_000));
    eprintln!("a post on a full disk: {s} {refused}");
    assert_eq!((s, refused["error"].as_str()), (507, Some("disk_full")), "{refused}");
    assert!(refused.get("ts_ms").is_none(), "a refused post was acknowledged: {refused}");
    std::fs::remove_file(&ballast).unwrap();
    let (s, after) = post(&server, "after".into());
    assert_eq!(s, 201, "space returned, no restart: {after}");
    server.signal("-KILL");
    let server = Server::start(&store, &args);
    for v in [first, after] {
        let id = v["id"].as_u64().unwrap();
        let (s, got) = body(http.get(server.url(&format!("/posts/{id}"))).send().unwrap());
        assert_eq!((s, &got["content"]), (200, &v["content"]), "post {id}");
    }
    drop(server);
}

/// The bytes of a data block in the full-disk test: 3 × 87,000 (about 255 KiB) of 0x07.
const BLOCK_BYTES: usize = 3 * 87_000;

/// The store's disk fills up under `kith serve`: user writes are refused with 507
/// `disk_full` (never acknowledged), reads go on, and once space returns writes are taken
/// again without a restart (RocksDB resumes by itself within its 5 s polling). After a
/// kill -9 every acknowledged write is there.
#[test]
fn a_full_store_disk_refuses_writes_until_space_returns() {
    let dir = tempfile::tempdir().unwrap();
    let built = store(dir.path(), "50");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let disk = match Tmpfs::mount(&mnt, "24m") {
        Ok(m) => m,
        Err(why) => {
            eprintln!("skipped: cannot mount a tmpfs ({why})");
            return;
        }
    };
    let store = mnt.join("store");
    common::service::copy_dir(&built, &store);
    let mut server = Server::start(&store, &[]);
    let http = client();
    // Every write sets a user's name to its version and a block of about 255 KiB.
    let block = "BwcH".repeat(BLOCK_BYTES / 3);
    let put = |server: &Server, version: u64| {
        let uid = version % 7 + 1;
        let request = json!({"profile": {"name": format!("v{version}")}, "data_base64": block});
        let (s, r) =
            body(http.put(server.url(&format!("/users/{uid}"))).json(&request).send().unwrap());
        (uid, s, r)
    };
    let mut acked = std::collections::BTreeMap::new();
    let mut version = 0;
    let refused = loop {
        version += 1;
        assert!(version < 400, "the disk never filled");
        match put(&server, version) {
            (uid, 200, _) => {
                acked.insert(uid, version);
            }
            (_, s, r) => break (s, r),
        }
    };
    eprintln!("write {version} on a full disk: {refused:?}");
    assert_eq!((refused.0, refused.1["error"].as_str()), (507, Some("disk_full")), "{refused:?}");
    let (s, health) = body(http.get(server.url("/health")).send().unwrap());
    assert_eq!(s, 200, "{health}");
    let (s, user) = body(http.get(server.url("/users/1")).send().unwrap());
    assert_eq!(s, 200, "reads on a full disk: {user}");

    disk.resize("256m");
    let freed = std::time::Instant::now();
    loop {
        version += 1;
        match put(&server, version) {
            (uid, 200, _) => {
                acked.insert(uid, version);
                break;
            }
            (_, 507, _) if freed.elapsed() < Duration::from_secs(30) => {
                std::thread::sleep(Duration::from_millis(200));
            }
            other => panic!("{:?} after space returned: {other:?}", freed.elapsed()),
        }
    }
    eprintln!("writes resumed {:?} after space returned, no restart", freed.elapsed());
    server.signal("-KILL");
    let server = Server::start(&store, &[]);
    for (uid, version) in acked {
        let (s, user) = body(http.get(server.url(&format!("/users/{uid}"))).send().unwrap());
        assert_eq!(s, 200, "{user}");
        assert_eq!(user["profile"]["name"], json!(format!("v{version}")), "user {uid}: {user}");
        assert_eq!(user["data_bytes"], json!(BLOCK_BYTES), "user {uid}: {user}");
    }
    drop(server);
}
