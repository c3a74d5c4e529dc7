//! Operations on a running local cluster besides starting and stopping it: a node's clock,
//! `nodetool`, and waiting for nodes to be seen up or down.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use super::{LocalCluster, clock, install, net, node};
use crate::error::{Error, Result};

impl LocalCluster {
    /// Sets node `index`'s clock `offset_s` seconds ahead (behind when negative) of the
    /// machine's, within a second, on a cluster started skewable.
    pub fn set_clock(&self, index: usize, offset_s: i64) -> Result<()> {
        if !self.skewable {
            return Err(Error::Cluster(format!(
                "{}: the cluster's clocks cannot be skewed; start it with `kith cluster up --skewable`",
                self.dir.display()
            )));
        }
        clock::set_offset(&self.nodes[self.position(index)?].clock_file(), offset_s)
    }

    /// Cuts the network links between node `index` and each node in `others`, both ways, and
    /// with `clients` its link to this machine's processes too, until [`LocalCluster::mend`];
    /// on a cluster started with its own network.
    pub fn cut(&self, index: usize, others: &[usize], clients: bool) -> Result<()> {
        if !self.netns {
            return Err(Error::Cluster(format!(
                "{}: the cluster's nodes share the machine's network and cannot be cut apart; start it with `kith cluster up --netns`",
                self.dir.display()
            )));
        }
        let a = self.nodes[self.position(index)?].address;
        let others: Vec<Ipv4Addr> = others
            .iter()
            .map(|&o| self.position(o).map(|i| self.nodes[i].address))
            .collect::<Result<_>>()?;
        net::cut(a, &others, clients)
    }

    /// Restores every link [`LocalCluster::cut`] cut.
    pub fn mend(&self) -> Result<()> {
        if !self.netns {
            return Ok(());
        }
        net::mend(&self.nodes.iter().map(|n| n.address).collect::<Vec<_>>())
    }

    /// Runs `nodetool` against node `index` (flush, status, …) and returns its output.
    pub fn nodetool(&self, index: usize, args: &[&str]) -> Result<String> {
        let n = &self.nodes[self.position(index)?];
        // The tool reaches the same JDK internals as the server: it needs its module options.
        let out = n
            .command("java")
            .arg("-Xmx128m")
            .args(
                node::jvm_options()
                    .filter(|o| o.starts_with("--add-") || o.starts_with("-Dio.netty")),
            )
            .arg("-cp")
            .arg(format!("{}/*", self.lib.display()))
            .arg("-Dlogback.configurationFile=/dev/null")
            .arg("org.apache.cassandra.tools.NodeTool")
            .args(["-h", "127.0.0.1", "-p", &n.jmx_port.to_string()])
            .args(args)
            .output()
            .map_err(Error::io("running nodetool"))?;
        if !out.status.success() {
            return Err(Error::Cluster(format!(
                "nodetool {} on node {index}: {}",
                args.join(" "),
                install::tail(&String::from_utf8_lossy(&out.stderr), 3)
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Waits until node `observer`'s failure detector marks every node in `down` as down
    /// (`DN` in its `nodetool status`), so it stops sending them requests.
    pub fn wait_seen_down(&self, observer: usize, down: &[usize], timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let addresses: Vec<String> = down
            .iter()
            .map(|&d| self.position(d).map(|i| self.nodes[i].address.to_string()))
            .collect::<Result<_>>()?;
        loop {
            let out = self.nodetool(observer, &["status"])?;
            let all = addresses.iter().all(|a| {
                out.lines().any(|l| {
                    let mut f = l.split_whitespace();
                    f.next() == Some("DN") && f.next() == Some(a.as_str())
                })
            });
            if all {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error::Cluster(format!(
                    "node {observer} does not see nodes {down:?} down after {timeout:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Waits until the nodes `which` accept CQL and each lists every other node as a peer.
    pub(super) fn wait_ready(&self, which: &[usize]) -> Result<()> {
        let t0 = Instant::now();
        let deadline = t0 + self.timeout;
        for &i in which {
            let n = &self.nodes[i];
            loop {
                if !n.alive() {
                    return Err(Error::Cluster(format!(
                        "node {} ({}) exited while starting: {} (log: {})",
                        n.index,
                        n.address,
                        n.log_tail(),
                        n.log().display()
                    )));
                }
                if n.listening() {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(Error::Cluster(format!(
                        "node {} ({}) did not accept CQL within {:.0} s: {} (log: {})",
                        n.index,
                        n.address,
                        self.timeout.as_secs_f64(),
                        n.log_tail(),
                        n.log().display()
                    )));
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            self.say(format!(
                "node {} ({}) accepts CQL after {:.1} s",
                n.index,
                n.address,
                t0.elapsed().as_secs_f64()
            ));
        }
        let live: Vec<Ipv4Addr> =
            self.nodes.iter().filter(|n| n.alive()).map(|n| n.address).collect();
        let targets: Vec<Ipv4Addr> = which.iter().map(|&i| self.nodes[i].address).collect();
        crate::schema::wait_peers(&targets, &live, deadline)?;
        self.say(format!(
            "all {} running nodes see each other after {:.1} s",
            live.len(),
            t0.elapsed().as_secs_f64()
        ));
        Ok(())
    }
}
