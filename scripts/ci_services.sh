#!/usr/bin/env bash
# Make the services the test suite needs available. The tests start their own throwaway
# servers on 127.0.0.1; this only installs the programs, with the system package manager
# (Debian's apt-get) when this user may (root, or sudo without a password), saying so.
#
# A service that is still missing gets one line here; its tests are then skipped, and
# counted at the end of the pytest run — except under CI (CI=true), where this script fails,
# because a green CI run must have run every test.
#
# To add a service: one `need` line below (and a fixture that calls tests/services.missing).
set -uo pipefail
export DEBIAN_FRONTEND=noninteractive

MISSING=()
PRESENT=()
UPDATED=""

_sudo() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi; }
_can_install() {
  command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" -eq 0 ] || sudo -n true 2>/dev/null; }
}
_apt_install() {
  if [ -z "$UPDATED" ]; then _sudo apt-get update -qq >/dev/null && UPDATED=1; fi
  _sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# need NAME CHECK PACKAGE...: NAME is present when the shell command CHECK succeeds; else
# install the Debian PACKAGEs and check again.
need() {
  local name="$1" check="$2"
  shift 2
  if eval "$check" >/dev/null 2>&1; then PRESENT+=("$name"); return 0; fi
  if _can_install; then
    echo "services: installing $name with apt-get (package $*)…" >&2
    if _apt_install "$@" && eval "$check" >/dev/null 2>&1; then
      echo "services: installed $name" >&2
      PRESENT+=("$name")
      return 0
    fi
    echo "services: apt-get could not install $*" >&2
  fi
  MISSING+=("$name|$*")
}

# the fence's Valkey/Redis backend tests
need "redis-server" "command -v redis-server" redis-server
# the PostgreSQL store tests (initdb and pg_ctl; tests/services/postgres.py)
need "PostgreSQL server" "ls /usr/lib/postgresql/*/bin/initdb || command -v initdb" postgresql
# the git workspace probe's tests (tests/probes/test_git.py)
need "git" "command -v git" git
# the web console's browser tests (Playwright drives Debian's Chromium at /usr/bin/chromium;
# Playwright's own browser download is not used)
need "Chromium" "test -x /usr/bin/chromium" chromium

if [ "${#MISSING[@]}" -eq 0 ]; then
  echo "services: ${PRESENT[*]} present" >&2
  exit 0
fi
for entry in "${MISSING[@]}"; do
  echo "services: ${entry%%|*} is not installed and cannot be installed here; the tests that need it will not run (install the Debian package: sudo apt-get install ${entry#*|})" >&2
done
case "${CI:-}" in
  1 | true | TRUE | True | yes | on)
    echo "services: under CI every service must be present" >&2
    exit 1
    ;;
esac
exit 0
