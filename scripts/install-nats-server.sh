#!/usr/bin/env bash
# Installs nats-server 2.10 or later as /usr/local/bin/nats-server (ahead of /usr/sbin on the PATH), taken from
# Debian's nats-server package of trixie: bookworm packages 2.9.10, whose stream replicas diverge when a node is
# killed or paused under writes (the short chaos run found replicas holding different events at the same sequence in
# 4 of 14 runs, and read models that skipped commits; 0 of 11 with 2.10.27; bench/NOTES.md, "Issue 32, stop 40").
# The package is a static Go binary: only the binary is taken, the system's own package and service stay as they are.
# Idempotent: exits early when the nats-server on the PATH is 2.10 or later (`--check`: only tell, by exit status).
set -euo pipefail

MIN_MAJOR=2
MIN_MINOR=10

# "2.10.27" from `nats-server --version` ("nats-server: v2.10.27"), or nothing.
version_of() { "$1" --version 2>/dev/null | sed -nE 's/^nats-server: v?([0-9]+\.[0-9]+\.[0-9]+).*/\1/p'; }
recent_enough() {
  local major minor
  IFS=. read -r major minor _ <<<"$1"
  [ "$major" -gt "$MIN_MAJOR" ] || { [ "$major" -eq "$MIN_MAJOR" ] && [ "$minor" -ge "$MIN_MINOR" ]; }
}

current="$(command -v nats-server || true)"
if [ -n "$current" ]; then
  v="$(version_of "$current")"
  if [ -n "$v" ] && recent_enough "$v"; then
    [ "${1:-}" = "--check" ] || echo "nats-server: $v at $current"
    exit 0
  fi
fi
# --check: only say (exit status) whether the PATH's nats-server is recent enough.
[ "${1:-}" != "--check" ] || exit 1

# shellcheck source=scripts/trixie-apt.sh
source "$(dirname "$0")/trixie-apt.sh" deb

echo "nats-server: ${current:-none} is ${v:-of an unknown version}; fetching Debian trixie's nats-server package"
apt-get "${apt_opts[@]}" update -qq
(cd "$work" && apt-get "${apt_opts[@]}" download -qq nats-server >/dev/null)
dpkg-deb --fsys-tarfile "$work"/nats-server_*.deb | tar -xO ./usr/sbin/nats-server >"$work/nats-server"
chmod 0755 "$work/nats-server"
v="$(version_of "$work/nats-server")"
if [ -z "$v" ] || ! recent_enough "$v"; then
  echo "nats-server: the package fetched holds version '${v:-unknown}', not $MIN_MAJOR.$MIN_MINOR or later" >&2
  exit 1
fi
$sudo_cmd install -m 0755 "$work/nats-server" /usr/local/bin/nats-server
echo "nats-server: installed $v as /usr/local/bin/nats-server"
