#!/usr/bin/env bash
# Installs what firth's build, tests and benchmarks need: Debian packages (apt only) and the
# npm packages of the interop tests from their committed lockfile. Idempotent: when all is
# present it only checks, which takes about a second.
#
# --bench also installs the peers the network benchmarks compare firth with (Redis and
# PostgreSQL, started by bench/run.sh on loopback in temp dirs) and their C client libraries.
set -euo pipefail
cd "$(dirname "$0")/.."

bench=0
for arg in "$@"; do
  case "$arg" in
    --bench) bench=1 ;;
    *) echo "usage: scripts/install-deps.sh [--bench]" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake pkg-config clang libclang-rt-14-dev
  libzstd-dev liblz4-dev libjansson-dev libcmocka-dev libedit-dev
  librocksdb-dev libroaring-dev libavro-dev libsnappy-dev zlib1g-dev
  libprotobuf-c-dev protobuf-c-compiler libuv1-dev libmicrohttpd-dev
  nodejs npm
)
if [ "$bench" = 1 ]; then
  packages+=(redis-server libhiredis-dev libpq-dev)
  # postgresql-15 on Debian 12; another release's PostgreSQL through the meta package.
  if apt-cache show postgresql-15 >/dev/null 2>&1 ||
     dpkg-query -W -f='${Status}' postgresql-15 2>/dev/null | grep -q "install ok installed"; then
    packages+=(postgresql-15)
  else
    packages+=(postgresql)
  fi
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from outside Debian (a newer build on PATH): then the npm package is not needed.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
todo=()
for p in "${missing[@]}"; do [ -n "$p" ] && todo+=("$p"); done
if [ ${#todo[@]} -gt 0 ]; then
  echo "install-deps: installing ${todo[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${todo[@]}"
fi

# The interop tests' npm packages, pinned by tests/interop/package-lock.json.
if [ -f tests/interop/package-lock.json ]; then
  stamp=tests/interop/node_modules/.firth-lock-stamp
  if [ ! -f "$stamp" ] || ! cmp -s tests/interop/package-lock.json "$stamp"; then
    echo "install-deps: npm ci in tests/interop"
    (cd tests/interop && npm ci --no-audit --no-fund --loglevel=error)
    cp tests/interop/package-lock.json "$stamp"
  fi
fi
