//! `kith store ... --cassandra`: the store on a Cassandra cluster: build, relayout, drop, and
//! the `--method hash` placement.

use std::time::Instant;

use anyhow::{Result, bail};
use clap::Args;
use kith_store::DataSpec;
use serde::Serialize;

use kith_lab::cli::GraphInput;

use super::choice::{LayoutChoice, Placement};

/// The record and page sizes that make the layout's pages the store's partitions: `k`
/// records of 64 bytes.
fn partition_pages(k: u64) -> (u64, u64) {
    (64, 64 * k.max(1))
}

/// Where a store on Cassandra is: `--cassandra HOSTS --keyspace K`.
#[derive(Clone, Debug, Args)]
pub(crate) struct CassandraArgs {
    /// The Cassandra cluster's contact points, `HOST[:PORT],…` (as `kith cluster up` prints).
    #[arg(long, value_name = "HOSTS")]
    pub(crate) cassandra: Option<String>,
    /// The keyspace of the store on Cassandra.
    #[arg(long, default_value = kith_cassandra::DEFAULT_KEYSPACE, requires = "cassandra")]
    pub(crate) keyspace: String,
}

impl CassandraArgs {
    /// The options to reach the store (an error if `--cassandra` was not given).
    pub(crate) fn options(&self) -> Result<kith_cassandra::CassandraOptions> {
        let Some(hosts) = &self.cassandra else { bail!("name the cluster with --cassandra HOSTS") };
        kith_cassandra::check_keyspace(&self.keyspace)?;
        Ok(kith_cassandra::CassandraOptions::new(
            kith_cassandra::parse_hosts(hosts)?,
            &self.keyspace,
        ))
    }
}

#[derive(Debug, Args)]
pub(crate) struct DropArgs {
    #[command(flatten)]
    pub(super) cassandra: CassandraArgs,
}

/// `kith store build --cassandra`: the graph's users written to the cluster in the layout's
/// order, `--partition-users` per partition (1 for `--method hash`), with friend copies.
pub(super) fn build_cassandra(
    input: &GraphInput,
    choice: &LayoutChoice,
    cassandra: &CassandraArgs,
    partition_users: u64,
    friend_copies: Option<u32>,
    spec: DataSpec,
    json: bool,
) -> Result<()> {
    let options = cassandra.options()?;
    let hash = choice.method == Some(Placement::Hash);
    let graph = input.load_undirected()?;
    let t = Instant::now();
    // A partition is read by one request whatever its size: the layout's "page" is one
    // partition of `partition_users` records (unless --record-bytes says otherwise).
    let (layout, mut meta) = choice.resolve(&graph, partition_pages(partition_users))?;
    if hash {
        meta.method = "hash".into();
    }
    let layout_seconds = t.elapsed().as_secs_f64();
    let config = kith_cassandra::BuildConfig {
        partition_users: if hash { 1 } else { partition_users },
        friend_copies: friend_copies.unwrap_or(if hash { 0 } else { 1 }),
        data: spec,
        seed: choice.seed,
        replication: None,
        progress: true,
    };
    let method = meta.method.clone();
    let (_store, report) = kith_cassandra::build(&options, &graph, &layout, meta, &config)?;
    #[derive(Serialize)]
    struct Out<'a> {
        hosts: String,
        keyspace: &'a str,
        method: String,
        partition_users: u64,
        friend_copies: u32,
        layout_seconds: f64,
        #[serde(flatten)]
        build: &'a kith_cassandra::BuildReport,
    }
    let out = Out {
        hosts: options.hosts.join(","),
        keyspace: &options.keyspace,
        method,
        partition_users: config.partition_users,
        friend_copies: config.friend_copies,
        layout_seconds,
        build: &report,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "built keyspace {} on {}: {} users, {} friend entries, {} layout, {} users per partition \
             ({} partitions), {} friend copies (limit {}); layout {:.2} s, load {:.1} s ({:.0} users/s)",
            out.keyspace,
            out.hosts,
            report.users,
            report.friend_entries,
            out.method,
            out.partition_users,
            report.partitions,
            report.copies,
            out.friend_copies,
            layout_seconds,
            report.load_seconds,
            report.users_per_second
        );
    }
    Ok(())
}

/// `kith store relayout --cassandra`: the next generation written in the new order, then
/// switched to (servers on the store follow within a second).
pub(super) fn relayout_cassandra(
    choice: &LayoutChoice,
    cassandra: &CassandraArgs,
    partition_users: Option<u64>,
    friend_copies: Option<u32>,
    json: bool,
) -> Result<()> {
    let options = cassandra.options()?;
    let store = kith_cassandra::CassandraStore::open(&options)?;
    let hash = choice.method == Some(Placement::Hash);
    let graph = store.graph()?.graph;
    let k = partition_users.unwrap_or(store.partition_users());
    let (layout, mut meta) = choice.resolve(&graph, partition_pages(k))?;
    if hash {
        meta.method = "hash".into();
    }
    let k = if hash { Some(1) } else { partition_users };
    let copies = if hash { Some(friend_copies.unwrap_or(0)) } else { friend_copies };
    let report = store.relayout(kith_store::NewLayout::Given(&layout, meta), k, copies, true)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "relaid out keyspace {}: generation {} -> {}, {} users ({} appended), {} users per partition, \
             {} friend copies (limit {}) (copy {:.1} s)",
            options.keyspace,
            report.from_generation,
            report.to_generation,
            report.users + report.appended,
            report.appended,
            report.partition_users,
            report.copies,
            report.friend_copies,
            report.rewrite_seconds
        );
    }
    Ok(())
}
