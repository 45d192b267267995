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
