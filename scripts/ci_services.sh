#!/usr/bin/env bash
# Make the services the test suite needs available: redis-server (Debian's package) for the
# fence's Valkey/Redis backend tests, and the PostgreSQL server binaries (Debian's
# postgresql package) for the PostgreSQL store tests. The tests start their own throwaway
# servers on 127.0.0.1; nothing here starts a service.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
UPDATED=""
apt_install() {
  if [ -z "$UPDATED" ]; then $SUDO apt-get update -qq; UPDATED=1; fi
  $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
if ! command -v redis-server >/dev/null 2>&1; then
  echo "ci_services: installing redis-server (Debian package redis-server)"
  apt_install redis-server
fi
redis-server --version
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  echo "ci_services: installing the PostgreSQL server (Debian package postgresql)"
  apt_install postgresql
fi
for bin in /usr/lib/postgresql/*/bin; do
  "$bin/postgres" --version
done
