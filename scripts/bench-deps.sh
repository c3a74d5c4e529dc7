#!/usr/bin/env bash
# Installs what the experiments measure with beside kith itself when it is missing: fio
# (Debian's), which `kith experiment device-calibration` runs to time the machine's media.
set -euo pipefail

missing=()
command -v fio >/dev/null 2>&1 || missing+=(fio)
if ((${#missing[@]})); then
    echo "bench-deps: installing ${missing[*]}" >&2
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
