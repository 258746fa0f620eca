#!/usr/bin/env bash
# Installs and starts the system pieces memrelay's tests need on Debian: nats-server, Chromium, PostgreSQL 15 with
# pgvector (built from Debian's source package), and the npm dependencies. Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then $sudo_cmd apt-get update -qq; apt_updated=1; fi
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if ! command -v nats-server >/dev/null 2>&1; then
  echo "setup: installing nats-server"
  apt_install nats-server
fi

# Headless Chromium for the browser tests (sign-in and consent pages), driven by playwright-core.
if ! command -v chromium >/dev/null 2>&1; then
  echo "setup: installing chromium"
  apt_install chromium
fi

if ! command -v pg_config >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  echo "setup: installing PostgreSQL"
  apt_install postgresql postgresql-contrib
fi

if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  echo "setup: starting PostgreSQL"
  $sudo_cmd pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main start || true
  for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
fi

bash scripts/install-pgvector.sh

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing npm dependencies"
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error
fi
echo "setup: done"
