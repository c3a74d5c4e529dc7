//! Private `redis-server`s for tests and experiments (not part of kith's API): one launcher
//! that kith-feed's tests, the `kith` binary's tests and kith-lab's experiments share.
//!
//! [`RedisServer`] starts Redis on a free loopback port, without persistence, waits (at most
//! [`READY_WITHIN`]) until it answers `PING`, and can then be broken the ways the fault tests
//! need: killed with SIGKILL and restarted empty on the same port, paused with SIGSTOP and
//! continued, sent any command. Dropping it kills the server (paused or not), so a test that
//! fails never leaves one behind. [`TestRedis`] is the Redis a test may share with others:
//! the one named by `KITH_TEST_REDIS`, or else a private one.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a starting `redis-server` may take to answer `PING`.
pub const READY_WITHIN: Duration = Duration::from_secs(10);

/// How long [`RedisServer::command`] waits to connect and for each reply, so that a test
/// against a hung server fails instead of hanging.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// A `redis-server` of the caller's own on a free loopback port: no snapshots, no
/// append-only file (a restart always comes back empty). Killed on drop.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    url: String,
    extra: Vec<String>,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts one with the default settings.
    ///
    /// # Panics
    /// If `redis-server` cannot be run or does not answer within [`READY_WITHIN`].
    pub fn start() -> RedisServer {
        RedisServer::start_with(&[])
    }

    /// Starts one with `extra` server arguments after the defaults (e.g.
    /// `["--maxmemory", "2mb"]`); [`RedisServer::restart`] passes them again.
    ///
    /// # Panics
    /// As [`RedisServer::start`].
    pub fn start_with(extra: &[&str]) -> RedisServer {
        RedisServer::try_start_with(extra).unwrap_or_else(|e| panic!("{e}"))
    }

    /// As [`RedisServer::start_with`], but returning an error (naming the port and the
    /// reason) instead of panicking, for callers that report rather than assert.
    pub fn try_start_with(extra: &[&str]) -> std::io::Result<RedisServer> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut server = RedisServer {
            port,
            url: format!("redis://127.0.0.1:{port}"),
            extra: extra.iter().map(|s| s.to_string()).collect(),
            child: None,
        };
        server.launch()?;
        Ok(server)
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id while it runs, `None` after [`RedisServer::kill`].
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills the server with SIGKILL and waits for it to exit; everything it held is gone.
    /// Does nothing if it is not running.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server if it runs, then starts it again, empty, on the same port with the
    /// same arguments, and waits until it answers.
    ///
    /// # Panics
    /// As [`RedisServer::start`].
    pub fn restart(&mut self) {
        self.kill();
        self.launch().unwrap_or_else(|e| panic!("{e}"));
    }

    /// Stops the process with SIGSTOP: connections stay open but nothing is answered.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Continues a paused process with SIGCONT.
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    /// Runs one command on a connection of its own and returns the reply as text, as
    /// `redis-cli` prints it: `OK`, `PONG`, a number, a string (empty for nil); arrays and
    /// other replies in their debug form.
    ///
    /// # Panics
    /// If the server cannot be reached within 5 seconds or answers with an error: the
    /// commands tests send are expected to succeed.
    pub fn command(&self, args: &[&str]) -> String {
        match self.try_command(args) {
            Ok(reply) => reply,
            Err(e) => panic!("redis {args:?} on port {}: {e}", self.port),
        }
    }

    /// As [`RedisServer::command`], returning a failure instead of panicking.
    pub fn try_command(&self, args: &[&str]) -> redis::RedisResult<String> {
        let Some((name, rest)) = args.split_first() else {
            return Ok(String::new());
        };
        let client = redis::Client::open(self.url.as_str())?;
        let mut con = client.get_connection_with_timeout(COMMAND_TIMEOUT)?;
        con.set_read_timeout(Some(COMMAND_TIMEOUT))?;
        con.set_write_timeout(Some(COMMAND_TIMEOUT))?;
        let mut cmd = redis::cmd(name);
        for arg in rest {
            cmd.arg(*arg);
        }
        let reply: redis::Value = cmd.query(&mut con)?;
        Ok(match reply {
            redis::Value::Okay => "OK".to_string(),
            redis::Value::Nil => String::new(),
            redis::Value::Int(n) => n.to_string(),
            redis::Value::SimpleString(s) => s,
            redis::Value::BulkString(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            other => format!("{other:?}"),
        })
    }

    /// Starts the process and waits until it answers `PING`; fails if it exits first or
    /// stays silent for [`READY_WITHIN`].
    fn launch(&mut self) -> std::io::Result<()> {
        let port = self.port.to_string();
        let child = Command::new("redis-server")
            .args(["--port", &port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(&self.extra)
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "cannot run redis-server (apt-get install redis-server, or set \
                         KITH_TEST_REDIS where a shared one will do): {e}"
                    ),
                )
            })?;
        self.child = Some(child);
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if self.try_command(&["PING"]).is_ok_and(|r| r == "PONG") {
                return Ok(());
            }
            let exited = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
            let failure = match exited {
                Some(status) => format!("exited ({status}) before answering"),
                None if Instant::now() >= deadline => {
                    format!("did not answer PING within {READY_WITHIN:?}")
                }
                None => {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
            };
            self.kill();
            let args = self.extra.join(" ");
            return Err(std::io::Error::other(format!(
                "redis-server on port {port} (extra arguments: [{args}]) {failure}"
            )));
        }
    }

    fn signal(&self, sig: &str) {
        if let Some(pid) = self.pid() {
            let status = Command::new("kill").args([sig, &pid.to_string()]).status();
            assert!(
                status.as_ref().is_ok_and(|s| s.success()),
                "kill {sig} {pid} (redis-server on port {}): {status:?}",
                self.port
            );
        }
    }
}

impl Drop for RedisServer {
    /// SIGKILL ends a paused (stopped) process too, so no SIGCONT is needed first.
    fn drop(&mut self) {
        self.kill();
    }
}

/// A Redis for tests that may share one: the server `KITH_TEST_REDIS` names (the test
/// command starts one), or else a private [`RedisServer`], stopped on drop. Tests that break
/// Redis must use a [`RedisServer`] of their own instead, so no other test is disturbed.
#[derive(Debug)]
pub struct TestRedis {
    url: String,
    _private: Option<RedisServer>,
}

impl TestRedis {
    /// # Panics
    /// As [`RedisServer::start`], when `KITH_TEST_REDIS` is not set.
    pub fn get() -> TestRedis {
        if let Ok(url) = std::env::var("KITH_TEST_REDIS") {
            return TestRedis { url, _private: None };
        }
        let private = RedisServer::start();
        TestRedis { url: private.url().to_string(), _private: Some(private) }
    }

    pub fn url(&self) -> &str {
        &self.url
    }
}

/// The Redis Cluster tests share: the one `KITH_TEST_REDIS_CLUSTER` names (node URLs,
/// comma-separated, as `kith serve --redis-cluster` takes them; the test command starts one
/// with `kith cluster up`), or else one started for the whole test process on 127.0.7.1–6
/// (three masters, one replica each), killed when the process exits. Tests keep apart by
/// key prefix; tests that break the cluster start one of their own.
///
/// # Panics
/// If none is named and none can be started here, saying why.
pub fn test_redis_cluster() -> Vec<String> {
    use std::sync::OnceLock;

    use crate::redis_cluster::{LocalRedisCluster, RedisClusterConfig};

    static STARTED: OnceLock<Result<LocalRedisCluster, String>> = OnceLock::new();
    extern "C" fn stop_at_exit() {
        if let Some(Ok(cluster)) = STARTED.get() {
            let _ = cluster.clone().down(Duration::ZERO);
            let _ = std::fs::remove_dir_all(&cluster.dir);
        }
    }
    if let Ok(urls) = std::env::var("KITH_TEST_REDIS_CLUSTER") {
        return urls.split(',').map(str::to_string).collect();
    }
    let started = STARTED.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("kith-test-redis-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let base = std::net::Ipv4Addr::new(127, 0, 7, 1);
        let config = RedisClusterConfig {
            dir,
            base,
            port: free_port_on(base, 6).map_err(|e| e.to_string())?,
            ..RedisClusterConfig::default()
        };
        let cluster = LocalRedisCluster::up(&config).map_err(|e| e.to_string())?;
        // SAFETY: registers a plain extern "C" function with no preconditions.
        unsafe {
            libc::atexit(stop_at_exit);
        }
        Ok(cluster)
    });
    match started {
        Ok(cluster) => cluster.urls().split(',').map(str::to_string).collect(),
        Err(e) => panic!(
            "no test Redis Cluster (set KITH_TEST_REDIS_CLUSTER or let the test start one): {e}"
        ),
    }
}

/// A port free on `nodes` consecutive addresses from `base`, with its cluster-bus port
/// (+10000) free too.
pub fn free_port_on(base: std::net::Ipv4Addr, nodes: u32) -> std::io::Result<u16> {
    use std::net::{Ipv4Addr, TcpListener};
    'next: for port in (21000..40000u16).step_by(37) {
        for i in 0..nodes {
            let addr = Ipv4Addr::from(u32::from(base) + i);
            if TcpListener::bind((addr, port)).is_err()
                || TcpListener::bind((addr, port + 10000)).is_err()
            {
                continue 'next;
            }
        }
        return Ok(port);
    }
    Err(std::io::Error::other(format!("no free port pair on {nodes} addresses from {base}")))
}
