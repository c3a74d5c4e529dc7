//! One Cassandra node of a local cluster: its directory, configuration and JVM process.

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The CQL port every node listens on (each on its own loopback address).
pub const CQL_PORT: u16 = 9042;

const YAML: &str = include_str!("cassandra.yaml");
const JVM_OPTIONS: &str = include_str!("jvm.options");
const LOGBACK: &str = r#"<configuration>
  <appender name="FILE" class="ch.qos.logback.core.rolling.RollingFileAppender">
    <file>{dir}/logs/system.log</file>
    <rollingPolicy class="ch.qos.logback.core.rolling.FixedWindowRollingPolicy">
      <fileNamePattern>{dir}/logs/system.log.%i</fileNamePattern>
      <minIndex>1</minIndex><maxIndex>3</maxIndex>
    </rollingPolicy>
    <triggeringPolicy class="ch.qos.logback.core.rolling.SizeBasedTriggeringPolicy">
      <maxFileSize>20MB</maxFileSize>
    </triggeringPolicy>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"#;

/// A node as the cluster file records it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Node {
    /// 1, 2, …: the order nodes were added.
    pub index: usize,
    /// The address it listens on (storage 7000, CQL 9042): a loopback address, or one on the
    /// cluster's own network.
    pub address: Ipv4Addr,
    /// Its local JMX port (for `nodetool`), on 127.0.0.1.
    pub jmx_port: u16,
    /// Its token.
    pub token: i64,
    /// Its directory: data, commit log, hints, configuration, logs.
    pub dir: PathBuf,
    /// The JVM's process id while it runs.
    pub pid: Option<u32>,
    /// Whether it runs in a network namespace of its own (`super::net`), on `address`.
    #[serde(default)]
    pub netns: bool,
}

/// What a node is started with besides its own fields.
#[derive(Clone, Debug)]
pub(crate) struct Launch<'a> {
    pub cluster_name: &'a str,
    pub seeds: &'a [Ipv4Addr],
    pub heap_mb: u32,
    /// Whether the node streams its ranges from the others (a node joining a running cluster)
    /// or starts empty (the nodes of a new cluster).
    pub bootstrap: bool,
    pub lib: &'a Path,
    /// Whether the JVM reads its wall clock through the node's clock file.
    pub skewable: bool,
}

impl Node {
    /// `program`, to run in the node's network namespace if it has one.
    pub(crate) fn command(&self, program: &str) -> Command {
        if self.netns {
            super::net::command_in(self.address, program)
        } else {
            Command::new(program)
        }
    }

    /// The CQL endpoint.
    pub fn cql(&self) -> SocketAddr {
        SocketAddr::from((self.address, CQL_PORT))
    }

    /// Whether its JVM is running.
    pub fn alive(&self) -> bool {
        self.pid.is_some_and(pid_alive)
    }

    /// Whether it accepts CQL connections.
    pub fn listening(&self) -> bool {
        TcpStream::connect_timeout(&self.cql(), Duration::from_millis(300)).is_ok()
    }

    /// The file its clock's offset is read from, when the cluster is skewable.
    pub fn clock_file(&self) -> PathBuf {
        self.dir.join("clock")
    }

    /// Its main log.
    pub fn log(&self) -> PathBuf {
        self.dir.join("logs").join("system.log")
    }

    /// Writes its configuration (again) and starts its JVM, detached from kith's process group
    /// so it outlives the command that started it.
    pub(crate) fn start(&mut self, launch: &Launch<'_>) -> Result<()> {
        for sub in ["conf", "logs", "data", "commitlog", "hints", "saved_caches", "cdc_raw", "tmp"]
        {
            let d = self.dir.join(sub);
            std::fs::create_dir_all(&d).map_err(Error::io(format!("creating {}", d.display())))?;
        }
        let dir = self.dir.display().to_string();
        let seeds: Vec<String> = launch.seeds.iter().map(Ipv4Addr::to_string).collect();
        // A quarter of the heap for memtables on heap, as much off it.
        let memtable_mb = (launch.heap_mb / 4).max(32);
        let yaml = YAML
            .replace("{cluster_name}", launch.cluster_name)
            .replace("{token}", &self.token.to_string())
            .replace("{auto_bootstrap}", if launch.bootstrap { "true" } else { "false" })
            .replace("{dir}", &dir)
            .replace("{seeds}", &seeds.join(","))
            .replace("{address}", &self.address.to_string())
            .replace("{memtable_mb}", &memtable_mb.to_string());
        let conf = self.dir.join("conf");
        write(&conf.join("cassandra.yaml"), &yaml)?;
        write(&conf.join("logback.xml"), &LOGBACK.replace("{dir}", &dir))?;

        let jamm = super::install::jamm_jar(launch.lib)?;
        if self.netns {
            super::net::ensure(self.address)?;
        }
        let mut cmd = self.command("java");
        cmd.arg(format!("-Xms{}m", launch.heap_mb)).arg(format!("-Xmx{}m", launch.heap_mb));
        cmd.args(jvm_options());
        cmd.arg(format!("-javaagent:{}", jamm.display()))
            .arg(format!("-Dcassandra.config=file://{}", conf.join("cassandra.yaml").display()))
            .arg(format!("-Dlogback.configurationFile={}", conf.join("logback.xml").display()))
            .arg(format!("-Dcassandra.logdir={}", self.dir.join("logs").display()))
            .arg(format!("-Dcassandra.storagedir={dir}"))
            .arg(format!("-Dcassandra.jmx.local.port={}", self.jmx_port))
            // Native libraries the JVM unpacks (lz4's, one per start) stay in the node's
            // directory and go with it, not in /tmp.
            .arg(format!("-Djava.io.tmpdir={}", self.dir.join("tmp").display()))
            // A JVM that dies (SIGBUS on a full disk's memory-mapped commit log) leaves its
            // report in the node's logs, not in whatever directory started it.
            .arg(format!(
                "-XX:ErrorFile={}",
                self.dir.join("logs").join("hs_err_pid%p.log").display()
            ))
            // Gossip on loopback settles in well under a second; a joining node waits this
            // long for the ring before it streams (Cassandra's default is 30 s).
            .arg("-Dcassandra.ring_delay_ms=5000")
            .arg("-cp")
            .arg(format!("{}/*", launch.lib.display()))
            .arg("org.apache.cassandra.service.CassandraDaemon");
        let out_path = self.dir.join("logs").join("stdout.log");
        let out = File::create(&out_path)
            .map_err(Error::io(format!("creating {}", out_path.display())))?;
        let err = out.try_clone().map_err(Error::io("duplicating a log descriptor"))?;
        cmd.stdin(Stdio::null()).stdout(out).stderr(err).process_group(0);
        if launch.skewable {
            super::clock::skew_command(&mut cmd, &self.clock_file())?;
        }
        let child = cmd.spawn().map_err(Error::io("starting java"))?;
        self.pid = Some(child.id());
        // The child is not waited for here: the cluster file keeps its pid; `down` stops it.
        std::mem::forget(child);
        Ok(())
    }

    /// Sends `signal` to its JVM (nothing if it is not running).
    pub(crate) fn signal(&self, signal: i32) {
        if let Some(pid) = self.pid.filter(|&p| pid_alive(p)) {
            // SAFETY: kill(2) with a pid this cluster started and a valid signal number.
            unsafe {
                libc::kill(pid as i32, signal);
            }
        }
    }

    /// The last lines of its logs, for an error that says why it did not come up.
    pub(crate) fn log_tail(&self) -> String {
        let mut text = std::fs::read_to_string(self.log()).unwrap_or_default();
        if text.trim().is_empty() {
            text = std::fs::read_to_string(self.dir.join("logs").join("stdout.log"))
                .unwrap_or_default();
        }
        let errors: Vec<&str> =
            text.lines().filter(|l| l.starts_with("ERROR") || l.contains("Exception")).collect();
        if errors.is_empty() {
            super::install::tail(&text, 3)
        } else {
            super::install::tail(&errors.join("\n"), 3)
        }
    }
}

/// The JVM options, without comments and blank lines.
pub(crate) fn jvm_options() -> impl Iterator<Item = &'static str> {
    JVM_OPTIONS.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(Error::io(format!("writing {}", path.display())))
}

/// Whether a process with this id runs (and is not a zombie).
pub(crate) fn pid_alive(pid: u32) -> bool {
    // Reaps the process if this one started it and it has exited (otherwise harmless).
    let mut status = 0;
    // SAFETY: waitpid(2) with a valid pointer; WNOHANG never blocks.
    unsafe {
        libc::waitpid(pid as i32, &mut status, libc::WNOHANG);
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses: `Z` is a zombie.
        Ok(stat) => {
            stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
        }
        Err(_) => false,
    }
}
