#!/usr/bin/env bash
# Builds and installs pgvector for the native PostgreSQL from Debian's source package
# (pgvector is not packaged for bookworm). Idempotent: exits early when the extension is present.
set -euo pipefail

PG_MAJOR="${PG_MAJOR:-$(pg_config --version 2>/dev/null | sed -E 's/^PostgreSQL ([0-9]+).*/\1/' || echo 15)}"
ext_dir="$(pg_config --sharedir 2>/dev/null || echo /usr/share/postgresql/$PG_MAJOR)/extension"
if [ -f "$ext_dir/vector.control" ]; then
  echo "pgvector: already installed in $ext_dir"
  exit 0
fi

# shellcheck source=scripts/trixie-apt.sh
source "$(dirname "$0")/trixie-apt.sh" deb-src

echo "pgvector: fetching Debian source package"
apt-get "${apt_opts[@]}" update -qq
(cd "$work" && apt-get "${apt_opts[@]}" source --download-only pgvector >/dev/null)

echo "pgvector: installing build dependencies (postgresql-server-dev-$PG_MAJOR)"
if ! dpkg -s "postgresql-server-dev-$PG_MAJOR" >/dev/null 2>&1; then
  $sudo_cmd apt-get update -qq
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "postgresql-server-dev-$PG_MAJOR" make gcc >/dev/null
fi

orig="$(ls "$work"/pgvector_*.orig.tar.* | head -n 1)"
mkdir -p "$work/src"
tar -xf "$orig" -C "$work/src" --strip-components=1
echo "pgvector: building $(basename "$orig")"
make -C "$work/src" OPTFLAGS="" PG_CONFIG="$(command -v pg_config)" >/dev/null
$sudo_cmd make -C "$work/src" install PG_CONFIG="$(command -v pg_config)" >/dev/null
echo "pgvector: installed into $ext_dir"
