#!/usr/bin/env bash
# Installs and starts the system pieces memrelay needs on Debian: nats-server, Chromium, PostgreSQL 15 with pgvector
# (built from Debian's source package), and the npm dependencies. Safe to run repeatedly.
#   bash scripts/setup-system.sh              everything (what .ci/run does before the tests)
#   bash scripts/setup-system.sh nats npm     only the named parts: nats, chromium, postgres, prometheus, npm (what
#                                             `npm start` runs for whatever it is missing)
# A part that cannot be installed here (not root and no sudo, no apt-get) stops the script with the command to run.
set -euo pipefail
cd "$(dirname "$0")/.."

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(nats chromium postgres prometheus npm)
for part in "${parts[@]}"; do
  case "$part" in
    nats|chromium|postgres|prometheus|npm) ;;
    *) echo "setup: unknown part '$part' (parts: nats chromium postgres prometheus npm)" >&2; exit 2 ;;
  esac
done
wanted() { [[ " ${parts[*]} " == *" $1 "* ]]; }

sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"

# Why apt-get cannot be used here, or nothing when it can.
why_no_apt() {
  if ! command -v apt-get >/dev/null 2>&1; then echo "no apt-get on this machine"
  elif [ -n "$sudo_cmd" ] && ! command -v sudo >/dev/null 2>&1; then echo "not root, and no sudo"
  fi
}

apt_updated=""
# apt_install PART HOWTO PACKAGE...: installs the packages, or stops with HOWTO (what to do by hand) when it cannot.
apt_install() {
  local part="$1" howto="$2"
  shift 2
  local why
  why="$(why_no_apt)"
  if [ -n "$why" ]; then
    echo "setup: $part is missing and cannot be installed here ($why). $howto" >&2
    exit 1
  fi
  if [ -z "$apt_updated" ]; then $sudo_cmd apt-get update -qq; apt_updated=1; fi
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# nats-server 2.10 or later (bookworm packages 2.9.10, whose stream replicas diverge under node faults): Debian
# trixie's binary as /usr/local/bin/nats-server (scripts/install-nats-server.sh), unless the PATH's is recent enough.
if wanted nats; then
  why="$(why_no_apt)"
  if [ -n "$why" ] && ! bash scripts/install-nats-server.sh --check 2>/dev/null; then
    echo "setup: nats-server 2.10 or later is missing and cannot be installed here ($why). Put nats-server 2.10+ on the PATH (macOS: brew install nats-server; or a release binary from github.com/nats-io/nats-server), or set NATS_SERVER_BIN to its path, or NATS_URL to a running JetStream server." >&2
    exit 1
  fi
  bash scripts/install-nats-server.sh
fi

# Headless Chromium for the browser tests (sign-in and consent pages), driven by playwright-core.
if wanted chromium && ! command -v chromium >/dev/null 2>&1; then
  echo "setup: installing chromium"
  apt_install chromium "Install Chromium (sudo apt-get install -y chromium) to run the browser tests." chromium
fi

if wanted postgres; then
  if ! command -v pg_config >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
    echo "setup: installing PostgreSQL"
    apt_install PostgreSQL "Install PostgreSQL 15 or later (sudo apt-get install -y postgresql postgresql-contrib) to run the tests." postgresql postgresql-contrib
  fi

  if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
    echo "setup: starting PostgreSQL"
    $sudo_cmd pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main start || true
    for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
  fi

  bash scripts/install-pgvector.sh
fi

# promtool, which checks the deploy kit's alert rules (test/deploy-kit.test.ts). Only the binary is taken from Debian's
# prometheus package: installing the package would also install and start a Prometheus server.
if wanted prometheus && ! command -v promtool >/dev/null 2>&1; then
  echo "setup: installing promtool (from Debian's prometheus package)"
  why="$(why_no_apt)"
  if [ -n "$why" ]; then
    echo "setup: promtool is missing and cannot be installed here ($why). Put promtool (Debian: the prometheus package; or a release from github.com/prometheus/prometheus) on the PATH." >&2
    exit 1
  fi
  if [ -z "$apt_updated" ]; then $sudo_cmd apt-get update -qq; apt_updated=1; fi
  deb_dir="$(mktemp -d)"
  (cd "$deb_dir" && $sudo_cmd apt-get download -qq prometheus 2>/dev/null)
  dpkg-deb --fsys-tarfile "$deb_dir"/prometheus_*.deb | tar -xO ./usr/bin/promtool >"$deb_dir/promtool"
  $sudo_cmd install -m 0755 "$deb_dir/promtool" /usr/local/bin/promtool
  $sudo_cmd rm -rf "$deb_dir"
fi

# Compares node_modules with package-lock.json by content and runs `npm ci` (with progress) when they differ.
if wanted npm; then
  node scripts/npm-dependencies.mjs
fi
echo "setup: done"
