#!/usr/bin/env bash
# Start a local PostgreSQL for the store tests and print its SQLAlchemy URL on stdout.
# Idempotent: installs the Debian package if missing (needs root), starts the cluster,
# creates the role and database. Everything else goes to stderr.
set -euo pipefail
USER_NAME=animahub
DB_NAME=animahub_test
PASSWORD=animahub
PORT=${ANIMAHUB_PG_PORT:-5432}

as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi
}

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  echo "installing postgresql (Debian package)" >&2
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
fi
if ! pg_lsclusters -h 2>/dev/null | grep -q online; then
  if command -v service >/dev/null 2>&1; then service postgresql start >&2; else
    for c in $(pg_lsclusters -h | awk '{print $1"/"$2}'); do pg_ctlcluster "${c%/*}" "${c#*/}" start >&2; done
  fi
fi
for _ in $(seq 1 30); do
  as_postgres psql -qtAc "select 1" >/dev/null 2>&1 && break
  sleep 0.5
done
as_postgres psql -qtAc "select 1 from pg_roles where rolname='$USER_NAME'" | grep -q 1 \
  || as_postgres psql -qc "create role $USER_NAME login createdb password '$PASSWORD'" >&2
as_postgres psql -qtAc "select 1 from pg_database where datname='$DB_NAME'" | grep -q 1 \
  || as_postgres psql -qc "create database $DB_NAME owner $USER_NAME" >&2
echo "postgresql+psycopg://$USER_NAME:$PASSWORD@127.0.0.1:$PORT/$DB_NAME"
