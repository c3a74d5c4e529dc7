//! The server's settings: where it listens, how much one client may ask of it, who may call
//! it (token, allowed hosts), and the feed's settings. Every limit has a default a
//! production deployment on one machine would pick; each is documented where it is defined.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use kith_feed::FeedConfig;

/// A secret (the bearer token): its `Debug` output never shows the value, so logging a
/// configuration cannot leak it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value, for comparing against what a client sent.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// How much one client, and all clients together, may hold of the server.
#[derive(Clone, Debug)]
pub struct Limits {
    /// The time a connection may take to send a request's headers, counted from the
    /// connection's start or from the end of the previous response; it is also the idle
    /// keep-alive timeout. Default 10 s: a slow mobile client sends headers in well under
    /// a second, and idle or half-sent connections must not pile up.
    pub header_read_timeout: Duration,
    /// The time one request may take, reading its body included; after it the client gets
    /// 408 `request_timeout` while its body is still arriving, 504 `server_timeout` after.
    /// Default 30 s: a 4 MiB data block at 1.5 Mbit/s fits.
    pub request_timeout: Duration,
    /// The most open connections; one more is answered 503 `overloaded` and closed.
    /// Default 4096, below the usual descriptor limit (the store needs descriptors too).
    pub max_connections: usize,
    /// The most requests in progress at once; one more is answered 503 `overloaded` at
    /// once (load shedding) instead of queueing. Default 1024.
    pub max_concurrent_requests: usize,
    /// After a shutdown signal, how long in-flight requests may take to finish before
    /// their connections are dropped. Default 10 s.
    pub shutdown_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_connections: 4096,
            max_concurrent_requests: 1024,
            shutdown_timeout: Duration::from_secs(10),
        }
    }
}

/// The server's settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Where to listen. Default 127.0.0.1:7070.
    pub addr: SocketAddr,
    /// The largest request body in bytes, except on routes that carry a data block (those
    /// also fit the largest block in base64). Default 1 MiB.
    pub body_limit: usize,
    /// When set, writes need `Authorization: Bearer <token>`. Default none.
    pub token: Option<Secret>,
    /// Reads need the token too. Default false.
    pub token_reads: bool,
    /// Host names (with or without a port) requests may name in `Host`, besides the
    /// loopback names (`localhost`, `127.0.0.1`, `[::1]`), which are always allowed. When
    /// the server listens on a loopback address any other `Host` is refused (a browser
    /// page under a rebound DNS name cannot read the API); on other addresses an empty
    /// list allows every host. Default empty.
    pub allowed_hosts: Vec<String>,
    /// Timeouts and connection limits.
    pub limits: Limits,
    /// The feed's settings.
    pub feed: FeedConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 7070)),
            body_limit: 1 << 20,
            token: None,
            token_reads: false,
            allowed_hosts: Vec::new(),
            limits: Limits::default(),
            feed: FeedConfig::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_not_in_debug_output() {
        let config = ServerConfig {
            token: Some(Secret::new("hunter2-very-secret")),
            ..ServerConfig::default()
        };
        let text = format!("{config:?}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("<redacted>"), "{text}");
    }
}
