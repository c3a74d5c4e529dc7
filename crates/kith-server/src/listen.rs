//! The accept loop: HTTP/1.1 connections served by hyper with a header-read timeout (which
//! is also the idle keep-alive timeout), a cap on open connections, and a graceful
//! shutdown with a deadline.
//!
//! Why not `axum::serve`: it sets no header timeout, no connection limit, and waits for
//! every connection to finish on shutdown, so one client sending a body slowly could hold
//! shutdown (and the port) for as long as it liked, and idle half-sent requests piled up
//! until the descriptors ran out.
//!
//! **Invariant: after the shutdown signal, `run` returns within `shutdown_timeout`** (plus
//! one scheduling round): connections still open then are dropped.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::config::Limits;

/// What a connection over the limit is told before it is closed.
const OVERLOADED: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
connection: close\r\ncontent-length: 94\r\n\r\n\
{\"error\":\"overloaded\",\"message\":\"the server is at its limit of open connections; retry later\"}";

/// Serves `app` on `listener` until `shutdown` completes, then stops accepting, lets
/// in-flight requests finish for at most `limits.shutdown_timeout`, and drops the rest.
pub(crate) async fn run(
    listener: TcpListener,
    app: Router,
    limits: &Limits,
    shutdown: impl Future<Output = ()> + Send,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout).keep_alive(true);
    let open = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, _peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors, or a connection reset before it was accepted:
                    // wait a moment instead of spinning, and keep serving.
                    eprintln!("kith serve: accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Reap finished connections, so the set holds only open ones.
        while connections.try_join_next().is_some() {}
        let Ok(permit) = open.clone().try_acquire_owned() else {
            connections.spawn(refuse(stream));
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        let conn = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        connections.spawn(async move {
            // Errors here are the client's (a reset, a header timeout): nothing to report.
            let _ = conn.await;
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.shutdown_timeout, graceful.shutdown()).await.is_err() {
        eprintln!(
            "kith serve: {} connection(s) still busy after {} ms of shutdown; dropping them",
            connections.len(),
            limits.shutdown_timeout.as_millis()
        );
    }
    connections.shutdown().await;
}

/// Answers a connection over the limit with 503 and closes it, within a second at most.
async fn refuse(mut stream: TcpStream) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(OVERLOADED).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_overload_answer_has_the_right_length() {
        let text = std::str::from_utf8(super::OVERLOADED).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())), "{}", body.len());
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"], "overloaded");
    }
}
