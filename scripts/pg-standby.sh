#!/usr/bin/env bash
# A throw-away PostgreSQL 15 primary and hot standby (PostgreSQL's own streaming replication) for the read-replica
# tests: the system cluster at :5432 has no replication line in pg_hba.conf and must stay untouched, so this makes
# its own clusters under DIR, on loopback only, trust auth, and removes them on `remove`.
#
#   pg-standby.sh create DIR PRIMARY_PORT STANDBY_PORT   initdb the primary, start it, pg_basebackup -R the standby, start it
#   pg-standby.sh stop-standby DIR | start-standby DIR   stop (fast) or start the standby again
#   pg-standby.sh freeze-standby DIR | thaw-standby DIR  SIGSTOP / SIGCONT every process of the standby (a gray failure)
#   pg-standby.sh stop-primary DIR | start-primary DIR   stop the primary as a crash does (immediate: no shutdown
#                                                        checkpoint, clients cut off), or start it again (crash recovery)
#   pg-standby.sh remove DIR                             stop both and delete DIR
#
# Run as root, the clusters belong to the `postgres` user (initdb refuses root). pgvector is installed system-wide,
# so CREATE EXTENSION vector works in them.
set -euo pipefail

BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

wait_ready() { # port
  for _ in $(seq 1 100); do
    as_pg "$BIN/pg_isready" -q -h 127.0.0.1 -p "$1" && return 0
    sleep 0.1
  done
  echo "postgres on port $1 did not become ready" >&2
  return 1
}

settings() { # port socket_dir
  cat <<EOF
port = $1
listen_addresses = '127.0.0.1'
unix_socket_directories = '$2'
wal_level = replica
max_wal_senders = 4
hot_standby = on
# a test cluster: durability of its files does not matter, CPU and disk on a shared machine do
# projections commit asynchronously and a standby receives only flushed WAL: flush within 10 ms, not 200 ms
wal_writer_delay = 10ms
fsync = off
full_page_writes = off
shared_buffers = 32MB
max_connections = 60
EOF
}

cmd=${1:?usage: pg-standby.sh create|stop-standby|start-standby|stop-primary|start-primary|freeze-standby|thaw-standby|remove DIR ...}
dir=${2:?DIR missing}

case "$cmd" in
  create)
    primary_port=${3:?PRIMARY_PORT missing}
    standby_port=${4:?STANDBY_PORT missing}
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    as_pg "$BIN/initdb" -D "$dir/primary" -U postgres --auth=trust -E UTF8 --no-sync >"$dir/initdb.log"
    # initdb's pg_hba.conf already trusts replication connections from 127.0.0.1 (--auth=trust)
    settings "$primary_port" "$dir" | as_pg tee -a "$dir/primary/postgresql.conf" >/dev/null
    as_pg "$BIN/pg_ctl" -D "$dir/primary" -l "$dir/primary.log" -w start >/dev/null
    wait_ready "$primary_port"
    as_pg "$BIN/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres -D "$dir/standby" -R -X stream --checkpoint=fast
    # the copied postgresql.conf names the primary's port: the last setting of a name wins
    echo "port = $standby_port" | as_pg tee -a "$dir/standby/postgresql.conf" >/dev/null
    as_pg "$BIN/pg_ctl" -D "$dir/standby" -l "$dir/standby.log" -w start >/dev/null
    wait_ready "$standby_port"
    ;;
  stop-standby)
    as_pg "$BIN/pg_ctl" -D "$dir/standby" -m fast -w stop >/dev/null
    ;;
  start-standby)
    as_pg "$BIN/pg_ctl" -D "$dir/standby" -l "$dir/standby.log" -w start >/dev/null
    ;;
  stop-primary)
    as_pg "$BIN/pg_ctl" -D "$dir/primary" -m immediate -w stop >/dev/null
    ;;
  start-primary)
    as_pg "$BIN/pg_ctl" -D "$dir/primary" -l "$dir/primary.log" -w start >/dev/null
    ;;
  freeze-standby | thaw-standby)
    pid=$(head -1 "$dir/standby/postmaster.pid")
    signal=$([ "$cmd" = freeze-standby ] && echo STOP || echo CONT)
    # the postmaster first on freeze (it forks no new backend meanwhile), last on thaw
    if [ "$signal" = STOP ]; then kill -STOP "$pid"; fi
    for child in $(pgrep -P "$pid"); do kill -"$signal" "$child"; done
    if [ "$signal" = CONT ]; then kill -CONT "$pid"; fi
    ;;
  remove)
    if [ -f "$dir/standby/postmaster.pid" ]; then "$0" thaw-standby "$dir" || true; fi
    for c in standby primary; do
      if [ -f "$dir/$c/postmaster.pid" ]; then as_pg "$BIN/pg_ctl" -D "$dir/$c" -m immediate -w stop >/dev/null || true; fi
    done
    rm -rf "$dir"
    ;;
  *)
    echo "unknown command: $cmd" >&2
    exit 2
    ;;
esac
