#!/bin/bash
# A throwaway PostgreSQL server for the tests (PostgreSQL 15 from Debian).
#
#   eval "$(tests/pg.sh start)"   initdb in a new temp dir, start the server
#                                 on a unix socket in that dir only (no TCP),
#                                 with its own port number; prints
#                                 HUTCH_TEST_PG_DIR=... HUTCH_TEST_PG_PORT=...
#                                 HUTCH_TEST_PG=postgresql://... (database hutch)
#   tests/pg.sh stop DIR          stop that server and remove DIR
#   tests/pg.sh createdb DIR NAME a new empty database; prints its URI
#   tests/pg.sh dropdb DIR NAME
#   tests/pg.sh down DIR | up DIR the server goes away and comes back (the
#                                 store's outage tests)
#
# Callers stop it from a trap, so a failed test leaves nothing behind.
# initdb refuses to run as root: as root the server runs as the postgres
# user (made by Debian's package), in a 0700 directory that user owns, so
# only root and that user reach the socket (authentication is trust).
set -euo pipefail
bindir=${PG_BINDIR:-/usr/lib/postgresql/15/bin}

as_owner() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

port_of() { cat "$1/port"; }

uri() { echo "postgresql:///$2?host=$1&port=$(port_of "$1")&user=hutch"; }

start() {
	[ -x "$bindir/initdb" ] || { echo "pg.sh: no PostgreSQL in $bindir (scripts/install-deps.sh)" >&2; exit 1; }
	local dir port
	dir=$(mktemp -d /tmp/hutch-pg-XXXXXX)
	[ "$(id -u)" = 0 ] && chown postgres: "$dir"
	chmod 0700 "$dir"
	# the port only names the socket file: any free number will do, but
	# distinct servers get distinct ones so that logs tell them apart
	port=$((20000 + RANDOM % 20000))
	echo "$port" >"$dir/port"
	if ! as_owner "$bindir/initdb" -D "$dir/data" -U hutch -A trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1; then
		cat "$dir/initdb.log" >&2
		rm -rf "$dir"
		exit 1
	fi
	echo "-c listen_addresses='' -k $dir -p $port -c fsync=off -c max_connections=200" >"$dir/opts"
	if ! up "$dir"; then
		cat "$dir/server.log" >&2
		rm -rf "$dir"
		exit 1
	fi
	as_owner "$bindir/createdb" -h "$dir" -p "$port" -U hutch hutch
	echo "HUTCH_TEST_PG_DIR=$dir"
	echo "HUTCH_TEST_PG_PORT=$port"
	echo "HUTCH_TEST_PG='$(uri "$dir" hutch)'"
}

up() {
	as_owner "$bindir/pg_ctl" -D "$1/data" -l "$1/server.log" -w -t 30 -o "$(cat "$1/opts")" start >/dev/null
}

down() {
	as_owner "$bindir/pg_ctl" -D "$1/data" -m fast -w -t 30 stop >/dev/null
}

stop() {
	local dir=$1
	case "$dir" in /tmp/hutch-pg-*) ;; *) echo "pg.sh: not a test server dir: $dir" >&2; exit 1 ;; esac
	[ -d "$dir" ] || return 0
	as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
	rm -rf "$dir"
}

cmd=${1:-}
case "$cmd" in
start) start ;;
stop) stop "${2:?dir}" ;;
down) down "${2:?dir}" ;;
up) up "${2:?dir}" ;;
createdb) as_owner "$bindir/createdb" -h "${2:?dir}" -p "$(port_of "$2")" -U hutch "${3:?name}"; uri "$2" "$3" ;;
dropdb) as_owner "$bindir/dropdb" --force -h "${2:?dir}" -p "$(port_of "$2")" -U hutch "${3:?name}" ;;
*) echo "usage: tests/pg.sh start | stop DIR | down DIR | up DIR | createdb DIR NAME | dropdb DIR NAME" >&2; exit 2 ;;
esac
