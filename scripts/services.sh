#!/usr/bin/env bash
# Start the local services the tests use when they are installed but stopped.
# Never restarts or flushes a running one; tests use their own databases and key prefixes.
set -euo pipefail

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if [ -d /etc/postgresql ]; then
    echo "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
    for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  else
    echo "PostgreSQL is not installed: apt-get install postgresql (tests need it on 127.0.0.1:5432)" >&2
  fi
fi

if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  if command -v redis-server >/dev/null 2>&1; then
    echo "starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
    for _ in $(seq 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.2; done
  else
    echo "Redis is not installed: apt-get install redis-server (tests need it on 127.0.0.1:6379)" >&2
  fi
fi
