#!/usr/bin/env bash
# Make the services the test suite needs available: redis-server (Debian's package) for the
# fence's Valkey/Redis backend tests. The tests start their own server on 127.0.0.1.
set -euo pipefail
if ! command -v redis-server >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends redis-server >/dev/null
fi
redis-server --version
