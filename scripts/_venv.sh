# Shared by scripts/run and scripts/test: create .venv if missing and (re)install the project
# when pyproject.toml changed since the last install. Needs only a Python >= 3.11 on PATH.
ensure_venv() {
  local extras="$1"
  local py="${PYTHON:-}"
  if [ -z "$py" ]; then
    for cand in python3 python3.13 python3.12 python3.11 python; do
      if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        py="$cand"; break
      fi
    done
  fi
  if [ -z "$py" ]; then echo "workrail: needs Python >= 3.11 on PATH (or set PYTHON=...)" >&2; exit 1; fi
  if [ ! -x .venv/bin/python ]; then
    "$py" -m venv .venv
  fi
  local stamp=".venv/.installed${extras}"
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip >&2
    .venv/bin/python -m pip install --quiet -e ".${extras}" >&2
    touch "$stamp"
  fi
}
