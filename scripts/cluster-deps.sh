#!/usr/bin/env bash
# Installs what a local cluster needs when it is missing: Debian's redis-server (Redis and
# Redis Cluster), and Java and Maven for Apache Cassandra (whose jars `kith cluster up`
# fetches from Maven Central on first use); and for the trials' faults, Debian's faketime
# (clock skew) and iproute2 (network namespaces).
set -euo pipefail
need() { command -v "$1" >/dev/null 2>&1; }
missing=()
need redis-server || missing+=(redis-server)
need java || missing+=(default-jre-headless)
need mvn || missing+=(maven)
need faketime || missing+=(faketime)
need ip || missing+=(iproute2)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
