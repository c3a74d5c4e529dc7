//! Waiting for hinted handoff: writes a replica missed while it was down, paused or cut off
//! are kept as hints by the nodes that coordinated them, and replayed once it is back (every
//! 10 s at most). Until then a read at ONE from that replica returns what it held before.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use scylla::client::session::Session;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::statement::Consistency;
use scylla::statement::unprepared::Statement;

use crate::error::{Error, Result};
use crate::schema::{connect, runtime};

/// Waits, up to `within`, until no node of `hosts` (`ip:port`) holds hints for another
/// (Cassandra's `system_views.pending_hints`, asked of each node). Returns the hint files
/// still pending when it stopped waiting (0: all delivered).
pub fn wait_hints_delivered(hosts: &[String], within: Duration) -> Result<u64> {
    let deadline = Instant::now() + within;
    let addrs: Vec<SocketAddr> = hosts
        .iter()
        .map(|h| h.parse().map_err(|e| Error::Cluster(format!("host {h}: {e}"))))
        .collect::<Result<_>>()?;
    runtime()?.block_on(async {
        let session = connect(hosts).await?;
        loop {
            let mut pending = 0;
            for &a in &addrs {
                pending += pending_on(&session, a).await?;
            }
            if pending == 0 || Instant::now() >= deadline {
                return Ok(pending);
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
}

/// Hint files node `at` holds for other nodes.
async fn pending_on(session: &Session, at: SocketAddr) -> Result<u64> {
    let mut statement = Statement::new("SELECT files FROM system_views.pending_hints");
    statement.set_load_balancing_policy(Some(SingleTargetLoadBalancingPolicy::new(
        NodeIdentifier::NodeAddress(at),
        None,
    )));
    statement.set_consistency(Consistency::One);
    let rows = session
        .query_unpaged(statement, ())
        .await
        .map_err(|e| Error::Cluster(format!("pending hints on {at}: {e}")))?
        .into_rows_result()
        .map_err(|e| Error::Cluster(format!("pending hints on {at}: {e}")))?;
    let mut files = 0u64;
    for row in rows.rows::<(Option<i32>,)>().map_err(|e| Error::Cluster(e.to_string()))? {
        let (n,) = row.map_err(|e| Error::Cluster(e.to_string()))?;
        files += n.unwrap_or(0).max(0) as u64;
    }
    Ok(files)
}
