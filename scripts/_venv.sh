# Sourced by scripts/demo.sh and scripts/test.sh: create .venv and install the project into it.
# Safe to run again: it reinstalls only when pyproject.toml or constraints.txt changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
EXTRAS="${1:-}"
STAMP="$VENV/.kernelseek-install${EXTRAS:+-$EXTRAS}"
WANT="$(cat "$ROOT/pyproject.toml" "$ROOT/constraints.txt" | sha256sum | cut -d' ' -f1)"
if [ ! -x "$VENV/bin/python" ]; then
  echo "creating $VENV" >&2
  python3 -m venv "$VENV"
fi
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
  echo "installing kernelseek-bench${EXTRAS:+[$EXTRAS]} into $VENV (first run: a few minutes)" >&2
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    -c "$ROOT/constraints.txt" -e "$ROOT${EXTRAS:+[$EXTRAS]}"
  echo "$WANT" > "$STAMP"
fi
PY="$VENV/bin/python"
export PATH="$VENV/bin:$PATH"
