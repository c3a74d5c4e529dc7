#!/usr/bin/env bash
# Installs the system packages kith's build needs when they are missing: clang++ for RocksDB
# (built from source by the `rocksdb` crate; .cargo/config.toml names it, as it compiles
# RocksDB faster than g++) and libclang for its bindings; g++, which links, and with make
# builds GAPBS's reference code beside kith for `kith bench analytics`; npm, with which the
# build fetches the dashboard's charting library (ui/package-lock.json) to embed it.
set -euo pipefail

have_libclang() {
    ldconfig -p 2>/dev/null | grep -q 'libclang[-.0-9]*\.so' ||
        ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1
}

missing=()
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v clang++ >/dev/null 2>&1 || missing+=(clang)
command -v make >/dev/null 2>&1 || missing+=(make)
have_libclang || missing+=(libclang-dev)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
    echo "system-deps: installing ${missing[*]}" >&2
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
