# Sourced by build.sh and fetch.sh: creates (once) and activates the tools venv in .venv/models.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$ROOT/.venv/models"
LOCK="$ROOT/scripts/models/requirements.lock.txt"
STAMP="$VENV/.lock.sha256"
PYTHON="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
want="$(sha256sum "$LOCK" | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$want" ]; then
  # --no-deps: the lock file is the complete tree; it skips the GPU-only packages torch declares.
  "$VENV/bin/pip" install --disable-pip-version-check --no-deps -r "$LOCK"
  echo "$want" > "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
export PYTHONDONTWRITEBYTECODE=1
# No hub is reachable; fail fast instead of retrying network calls.
export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
export TOKENIZERS_PARALLELISM=false
