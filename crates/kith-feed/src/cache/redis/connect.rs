//! Connecting: to one Redis through the redis crate's reconnecting connection manager, or
//! to a cluster through its cluster client, with the feed's timeouts.

use std::sync::{Arc, Mutex, RwLock};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::super::con::{Con, Masters};
use super::super::health::Health;
use super::super::lua::{
    LUA_ADD, LUA_BEGIN, LUA_FINISH, LUA_FRIENDS_DROP, LUA_FRIENDS_FILL, LUA_READ, LUA_REMOVE,
    script_text,
};
use super::nodes::{self, cluster_client};
use super::{Redis, Shared, Target, near};
use crate::config::FeedConfig;
use crate::error::{Error, Result};

impl Redis {
    /// Connects to one Redis or a cluster with the timeouts of `config`, checked with a
    /// PING (and, on a cluster, its slot map read).
    pub(in crate::cache) async fn connect(
        target: Target<'_>,
        config: &FeedConfig,
    ) -> Result<Redis> {
        if config.redis_prefix.contains(['{', '}']) {
            return Err(Error::Invalid(format!(
                "redis prefix {:?}: braces would change which slot keys live in",
                config.redis_prefix
            )));
        }
        let timeouts = (config.redis_connect_timeout, config.redis_response_timeout);
        let connect = || async {
            Ok::<Con, Error>(match target {
                Target::One(url) => {
                    let client = redis::Client::open(url)?;
                    // No reconnection retries inside the manager: a call waiting for them would
                    // wait past its deadline. The probe retries instead, every probe interval.
                    let manager = ConnectionManagerConfig::new()
                        .set_connection_timeout(config.redis_connect_timeout)
                        .set_response_timeout(config.redis_response_timeout)
                        .set_number_of_retries(0);
                    Con::Single(ConnectionManager::new_with_config(client, manager).await?)
                }
                Target::Cluster(urls) => {
                    let client = cluster_client(
                        urls.iter().map(String::as_str),
                        timeouts.0,
                        timeouts.1,
                        false,
                    )?;
                    Con::Cluster(client.get_async_connection().await?)
                }
            })
        };
        let mut con = connect().await?;
        let waiting = connect().await?;
        let replica_reads = match target {
            Target::One(_) => None,
            Target::Cluster(urls) => {
                let client =
                    cluster_client(urls.iter().map(String::as_str), timeouts.0, timeouts.1, true)?;
                Some(RwLock::new(Con::Cluster(client.get_async_connection().await?)))
            }
        };
        let _: String = redis::cmd("PING").query_async(&mut con).await?;
        let masters = match target {
            Target::One(_) => Masters::default(),
            Target::Cluster(_) => Masters::fetch(&mut con).await?,
        };
        let nodes = match target {
            Target::One(_) => None,
            Target::Cluster(urls) => Some(nodes::Nodes::new(
                urls,
                config.redis_connect_timeout,
                config.redis_response_timeout,
            )?),
        };
        let script = |body| redis::Script::new(&script_text(body));
        let shared = Arc::new(Shared {
            con: RwLock::new(con),
            waiting: RwLock::new(waiting),
            nodes,
            replica_reads,
            owed: Mutex::new(Vec::new()),
            masters: Mutex::new(Arc::new(masters)),
            drop_script: script(LUA_FRIENDS_DROP),
            prefix: config.redis_prefix.clone(),
            friends_ttl: config.friends_ttl,
            deadline: config.redis_connect_timeout + config.redis_response_timeout,
            open_after: config.redis_response_timeout * 2,
            probe_interval: config.redis_probe_interval,
            health: Health::default(),
            past_breaker: Default::default(),
            near: near::Near::new(config.near_bytes, config.near_friends_ttl),
        });
        if let Target::Cluster(_) = target {
            tokio::spawn(Shared::watch(Arc::downgrade(&shared)));
            tokio::spawn(Shared::keep_replicas(Arc::downgrade(&shared)));
        }
        Ok(Redis {
            shared,
            read: script(LUA_READ),
            begin: script(LUA_BEGIN),
            finish: script(LUA_FINISH),
            add: script(LUA_ADD),
            remove: script(LUA_REMOVE),
            fill: script(LUA_FRIENDS_FILL),
        })
    }
}
