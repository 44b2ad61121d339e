#!/usr/bin/env bash
# Capture real server logs for the kinds tests and the benchmark: a
# PostgreSQL server and an nginx server on loopback, made to log errors and
# warnings of many kinds by a fixed workload of bad queries and requests.
#
# Usage: scripts/capture-server-logs.sh
#
# Writes tests/fixtures/families/server/postgres.out (the server's log) and
# nginx-error.out / nginx-access.out, each with a .status of 0. Installs the
# servers with apt-get when missing. Everything runs under
# $OUTBOX_FIXTURE_SCRATCH (default /tmp/outbox-fixtures)/server-logs, on
# ports 54329 and 18080, and is stopped at the end. What varies between
# runs: time stamps, process ids, the order of nginx's worker lines; the
# kinds (SQLSTATE codes, printed with log_error_verbosity=verbose, nginx's error messages, HTTP statuses) do not.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$ROOT/tests/fixtures/families/server
SCRATCH=${OUTBOX_FIXTURE_SCRATCH:-/tmp/outbox-fixtures}/server-logs
export LANG=C.UTF-8 LC_ALL=C.UTF-8 TZ=UTC

need() { command -v "$1" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$2" >/dev/null; }; }
need psql postgresql-client
need curl curl
[[ -x /usr/sbin/nginx ]] || { apt-get update -qq && apt-get install -y -qq nginx-light >/dev/null; }
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[[ -n $PGBIN ]] || { apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1); }

rm -rf "$SCRATCH"
mkdir -p "$SCRATCH/pg" "$SCRATCH/nginx/html/docs" "$SCRATCH/nginx/logs"

# --- PostgreSQL -------------------------------------------------------
chown postgres "$SCRATCH/pg"
as_pg() { su postgres -s /bin/bash -c "$*"; }
as_pg "$PGBIN/initdb -D $SCRATCH/pg/data -A trust -U postgres" >/dev/null
as_pg "$PGBIN/pg_ctl -D $SCRATCH/pg/data -l $SCRATCH/pg/server.log -w start -o \"-p 54329 -k $SCRATCH/pg \
  -c listen_addresses=127.0.0.1 -c log_line_prefix='%m [%p] %q%u@%d ' -c log_connections=on \
  -c log_disconnections=on -c log_min_messages=warning -c log_min_error_statement=error \
  -c log_error_verbosity=verbose -c deadlock_timeout=100ms -c lock_timeout=0\"" >/dev/null
trap 'as_pg "$PGBIN/pg_ctl -D $SCRATCH/pg/data -m fast stop" >/dev/null 2>&1 || true; /usr/sbin/nginx -p "$SCRATCH/nginx" -c nginx.conf -s stop 2>/dev/null || true' EXIT
PSQL=(psql -X -q -h 127.0.0.1 -p 54329 -U postgres)
"${PSQL[@]}" -d postgres -c "CREATE DATABASE shop" >/dev/null
"${PSQL[@]}" -d shop >/dev/null <<'SQL'
CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, qty int CHECK (qty >= 0));
CREATE TABLE orders (id serial PRIMARY KEY, item int REFERENCES items(id), n int);
INSERT INTO items SELECT g, 'item' || g, g FROM generate_series(1, 50) g;
CREATE ROLE reader LOGIN;
SQL
# A fixed workload: statements that fail in many ways, mixed with good
# ones, repeated with varying values.
for i in $(seq 1 60); do
  v=$(( (i * 37) % 97 ))
  "${PSQL[@]}" -d shop >/dev/null 2>&1 <<SQL || true
SELECT * FROM itemz WHERE id = $v;
INSERT INTO items VALUES ($(( v % 50 + 1 )), 'dup', 1);
INSERT INTO items VALUES ($(( 100 + i )), NULL, 1);
UPDATE items SET qty = -$v WHERE id = $(( v % 50 + 1 ));
INSERT INTO orders (item, n) VALUES ($(( 500 + v )), 1);
SELECT $v / 0;
SELECT 'abc$v'::int;
SELEC name FROM items;
SELECT nme FROM items WHERE id = $v;
COMMIT;
SELECT pg_sleep(0) FROM items WHERE id = $v;
SET statement_timeout = 1; SELECT count(*) FROM generate_series(1, 3000000); RESET statement_timeout;
SQL
  "${PSQL[@]}" -d shop -U reader -c "DELETE FROM items WHERE id = $v" >/dev/null 2>&1 || true
  "${PSQL[@]}" -d nosuchdb$(( i % 3 )) -c "SELECT 1" >/dev/null 2>&1 || true
  "${PSQL[@]}" -d shop -U ghost$(( i % 4 )) -c "SELECT 1" >/dev/null 2>&1 || true
done
# Two sessions that deadlock.
for r in 1 2 3; do
  "${PSQL[@]}" -d shop >/dev/null 2>&1 <<'SQL' &
BEGIN; UPDATE items SET qty = qty + 1 WHERE id = 1; SELECT pg_sleep(0.5); UPDATE items SET qty = qty + 1 WHERE id = 2; COMMIT;
SQL
  "${PSQL[@]}" -d shop >/dev/null 2>&1 <<'SQL' || true
BEGIN; UPDATE items SET qty = qty + 1 WHERE id = 2; SELECT pg_sleep(0.5); UPDATE items SET qty = qty + 1 WHERE id = 1; COMMIT;
SQL
  wait
done
as_pg "$PGBIN/pg_ctl -D $SCRATCH/pg/data -m fast stop" >/dev/null
cp "$SCRATCH/pg/server.log" "$OUT/postgres.out"
echo 0 >"$OUT/postgres.status"

# --- nginx ------------------------------------------------------------
N=$SCRATCH/nginx
echo '<h1>shop</h1>' >"$N/html/index.html"
cat >"$N/nginx.conf" <<CONF
worker_processes 1;
pid $N/nginx.pid;
error_log $N/logs/error.log info;
events { worker_connections 64; }
http {
  access_log $N/logs/access.log;
  client_body_temp_path $N/body; proxy_temp_path $N/proxy; fastcgi_temp_path $N/fcgi;
  uwsgi_temp_path $N/uwsgi; scgi_temp_path $N/scgi;
  client_max_body_size 1k;
  server {
    listen 127.0.0.1:18080;
    root $N/html;
    location /api/ { proxy_pass http://127.0.0.1:18099; proxy_connect_timeout 1s; }
    location /private/ { deny all; }
    location /docs/ { autoindex off; }
  }
}
CONF
/usr/sbin/nginx -p "$N" -c nginx.conf
base=http://127.0.0.1:18080
for i in $(seq 1 80); do
  curl -s -o /dev/null "$base/" || true
  curl -s -o /dev/null "$base/index.html?page=$i" || true
  curl -s -o /dev/null "$base/missing-$(( i % 7 )).png" || true
  curl -s -o /dev/null "$base/api/orders/$i" || true
  curl -s -o /dev/null "$base/private/key-$(( i % 3 ))" || true
  curl -s -o /dev/null "$base/docs/" || true
  curl -s -o /dev/null -X POST --data-binary @"$ROOT/Cargo.toml" "$base/upload" || true
  printf 'BOGUS\r\n\r\n' | timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/18080; cat >&3; cat <&3" >/dev/null 2>&1 || true
done
/usr/sbin/nginx -p "$N" -c nginx.conf -s stop
sleep 1
cp "$N/logs/error.log" "$OUT/nginx-error.out"
cp "$N/logs/access.log" "$OUT/nginx-access.out"
echo 0 >"$OUT/nginx-error.status"
echo 0 >"$OUT/nginx-access.status"
wc -l "$OUT/postgres.out" "$OUT/nginx-error.out" "$OUT/nginx-access.out" >&2
