# Shared by scripts/run and scripts/test: create .venv if missing and install the project
# into it, saying so. Once .venv is up to date the installer is not started at all: the
# stamp .venv/.installed<extras> holds a digest of what the install depends on (the venv's
# Python and pyproject.toml), and only a different digest reinstalls. The install is editable, so
# editing the code never needs one. Needs only a Python >= 3.11 on PATH and the package
# registry.

_wr_say() { printf 'workrail: %s\n' "$*" >&2; }

_wr_digest() {
  # What an install depends on; any change here means reinstall.
  {
    cat .venv/pyvenv.cfg 2>/dev/null || echo none
    cat pyproject.toml
  } | { sha256sum 2>/dev/null || shasum -a 256; } | cut -d' ' -f1
}

_wr_fresh() {
  [ -x .venv/bin/python ] && [ -f "$1" ] && [ "$(cat "$1")" = "$(_wr_digest)" ]
}

ensure_venv() {
  local extras="$1"
  local stamp=".venv/.installed${extras}"
  # An install with the dev extras also serves scripts/run.
  if _wr_fresh "$stamp" || { [ -z "$extras" ] && _wr_fresh ".venv/.installed[dev]"; }; then
    return 0
  fi
  local py="${PYTHON:-}"
  if [ -z "$py" ]; then
    for cand in python3 python3.13 python3.12 python3.11 python; do
      if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        py="$cand"; break
      fi
    done
  fi
  if [ -z "$py" ]; then _wr_say "needs Python >= 3.11 on PATH (or set PYTHON=...)"; exit 1; fi
  local started=$SECONDS what="WorkRail"
  if [ -n "$extras" ]; then what="WorkRail with its development tools"; fi
  if [ ! -x .venv/bin/python ]; then
    _wr_say "installing $what into .venv (first run only; about a minute)…"
    "$py" -m venv .venv
  elif [ -f "$stamp" ]; then
    _wr_say "pyproject.toml changed since the last install; updating .venv…"
  else
    _wr_say "installing $what into .venv (once)…"
  fi
  rm -f "$stamp"
  if ! .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip >&2 \
    || ! .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extras}" >&2; then
    _wr_say "the install failed (pip's message is above); fix that and run the command again."
    exit 1
  fi
  _wr_digest >"$stamp"
  _wr_say ".venv is ready ($((SECONDS - started)) s); next time this step is skipped."
}
