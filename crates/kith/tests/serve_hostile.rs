//! `kith serve` against hostile and slow clients, spoken to in raw TCP on loopback so no
//! client library hides what the server does: half-sent and idle connections are closed
//! after the header timeout, slow bodies time out and cannot hold up shutdown, connections
//! and requests over their limits get 503 `overloaded`, made-up methods add no metric
//! series, and browsers' cross-site writes and foreign `Host`s are refused.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Server;
use common::service::{body, client, store};

/// The server's `host:port`.
fn addr(server: &Server) -> String {
    server.base.trim_start_matches("http://").to_string()
}

fn connect(server: &Server) -> TcpStream {
    let s = TcpStream::connect(addr(server)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// Reads until the server closes the connection (or 5 s pass); returns what it sent.
fn read_all(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => panic!("the server kept the connection open: {e}; got {out:?}"),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Sends one request with `Connection: close`; returns the status and the whole response.
fn raw(server: &Server, request: &str) -> (u16, String) {
    let mut s = connect(server);
    s.write_all(request.as_bytes()).unwrap();
    let text = read_all(&mut s);
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, text)
}

/// Headers and one byte of a 999-byte body: a client that sends slowly, or stalls.
fn slow_body(server: &Server) -> TcpStream {
    let mut s = connect(server);
    let head = format!(
        "PUT /users/3/profile HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: 999\r\n\r\n{{",
        addr(server)
    );
    s.write_all(head.as_bytes()).unwrap();
    s
}

fn health(server: &Server) -> u16 {
    client().get(server.url("/health")).send().map_or(0, |r| r.status().as_u16())
}

#[test]
fn a_slow_body_cannot_hold_up_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "50");
    let mut server = Server::start(&store, &["--shutdown-timeout-ms", "500"]);
    let _slow = slow_body(&server);
    std::thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().unwrap();
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "still running 5 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_slow_body_times_out_with_408() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "50");
    let server = Server::start(&store, &["--request-timeout-ms", "300"]);
    let mut slow = slow_body(&server);
    let text = read_all(&mut slow);
    assert!(text.starts_with("HTTP/1.1 408") && text.contains("request_timeout"), "{text}");
}

#[test]
fn idle_and_half_sent_connections_are_closed_after_the_header_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "50");
    let server = Server::start(&store, &["--header-timeout-ms", "300"]);
    let mut held = Vec::new();
    for i in 0..200 {
        let mut s = connect(&server);
        if i % 2 == 0 {
            // Half a request line, never finished.
            s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ").unwrap();
        } else {
            // One whole request, then idle on a kept-alive connection.
            s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        }
        held.push(s);
    }
    let start = Instant::now();
    for mut s in held {
        let text = read_all(&mut s);
        assert!(text.is_empty() || text.starts_with("HTTP/1.1 "), "{text}");
    }
    assert!(start.elapsed() < Duration::from_secs(4), "took {:?}", start.elapsed());
    assert_eq!(health(&server), 200);
}

#[test]
fn connections_over_the_limit_get_503_and_the_server_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "50");
    let server = Server::start(&store, &["--max-connections", "8", "--header-timeout-ms", "1000"]);
    let idle: Vec<TcpStream> = (0..8).map(|_| connect(&server)).collect();
    std::thread::sleep(Duration::from_millis(200));
    let (status, text) = raw(&server, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("\"overloaded\""), "{text}");
    // The idle ones time out and free their places.
    let deadline = Instant::now() + Duration::from_secs(5);
    while health(&server) != 200 {
        assert!(Instant::now() < deadline, "/health did not come back");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(idle);
}

#[test]
fn requests_over_the_concurrency_limit_are_shed_with_503() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "50");
    let server = Server::start(&store, &["--max-concurrent-requests", "1"]);
    let slow = slow_body(&server);
    std::thread::sleep(Duration::from_millis(200));
    let (status, json) = body(client().get(server.url("/health")).send().unwrap());
    assert_eq!((status, json["error"].as_str()), (503, Some("overloaded")), "{json}");
    drop(slow);
    let deadline = Instant::now() + Duration::from_secs(5);
    while health(&server) != 200 {
        assert!(Instant::now() < deadline, "/health did not come back");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn made_up_methods_add_no_metric_series() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "50");
    let server = Server::start(&store, &[]);
    let long = "Q".repeat(4000);
    for m in (0..30).map(|i| format!("FROB{i}")).chain([long]) {
        let (status, text) = raw(
            &server,
            &format!("{m} /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
        );
        assert!((400..500).contains(&status) || status == 0, "{status} {text}");
    }
    let metrics = client().get(server.url("/metrics")).send().unwrap().text().unwrap();
    assert!(!metrics.contains("FROB") && !metrics.contains("QQQQ"), "made-up methods in /metrics");
    assert!(metrics.contains("method=\"other\""), "{metrics}");
}

#[test]
fn cross_site_writes_and_foreign_hosts_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "50");
    let server = Server::start(&store, &[]);
    let a = addr(&server);
    let friends = |uid: u64| {
        let (_, u) = body(client().get(server.url(&format!("/users/{uid}"))).send().unwrap());
        u["friends"].as_array().unwrap().iter().map(|f| f.as_u64().unwrap()).collect::<Vec<_>>()
    };
    let before = friends(1);
    let fid = (2..50).find(|f| !before.contains(f)).unwrap();
    let post = |extra: &str, body: &str| {
        raw(
            &server,
            &format!(
                "POST /users/1/friends/{fid} HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\n{extra}\
                 Content-Length: {}\r\n\r\n{body}",
                body.len()
            ),
        )
    };
    let form = "Content-Type: application/x-www-form-urlencoded\r\n";
    let cases = [
        (format!("Origin: https://evil.example\r\n{form}"), "a=b"),
        ("Origin: null\r\n".to_string(), ""),
        ("Sec-Fetch-Site: cross-site\r\n".to_string(), ""),
        (form.to_string(), "a=b"),
        ("Content-Type: text/plain\r\n".to_string(), "hi"),
    ];
    for (extra, b) in &cases {
        let (status, text) = post(extra, b);
        assert_eq!(status, 403, "{extra:?}: {text}");
        assert!(text.contains("\"cross_site\""), "{text}");
    }
    assert_eq!(friends(1), before, "a refused write changed the friend list");
    // DNS rebinding: a page under another name reaching this server.
    let (status, text) =
        raw(&server, "GET /users/1 HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 421, "{text}");
    assert!(text.contains("\"unknown_host\""), "{text}");
    // The same origin, `localhost` and scripts without `Origin` still work.
    let (status, text) = post(&format!("Origin: http://{a}\r\n"), "");
    assert_eq!(status, 200, "{text}");
    let (status, text) =
        raw(&server, "GET /users/1 HTTP/1.1\r\nHost: localhost:7070\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 200, "{text}");
    assert!(friends(1).contains(&fid));
}

#[test]
fn allowed_hosts_are_answered() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "50");
    let server = Server::start(&store, &["--allowed-host", "kith.example"]);
    let get = |host: &str| {
        raw(&server, &format!("GET /users/1 HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"))
            .0
    };
    assert_eq!(get("kith.example:7070"), 200);
    assert_eq!(get("other.example"), 421);
}

/// Runs `kith serve` for at most 10 s; its exit status (none if it had to be killed) and
/// its standard error.
fn serve_briefly(
    args: &[&str],
    env: &[(&str, &str)],
) -> (Option<std::process::ExitStatus>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kith"))
        .arg("serve")
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (status, err)
}

#[test]
fn an_empty_token_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "20");
    let s = common::p(&store);
    for (args, env) in [
        (vec!["--dir", s, "--addr", "127.0.0.1:0", "--token", ""], vec![]),
        (vec!["--dir", s, "--addr", "127.0.0.1:0"], vec![("KITH_TOKEN", "")]),
    ] {
        let (status, err) = serve_briefly(&args, &env);
        let status = status.expect("kith serve started with an empty token");
        assert!(!status.success() && err.contains("token") && err.contains("empty"), "{err}");
    }
}
