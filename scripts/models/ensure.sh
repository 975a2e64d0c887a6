#!/usr/bin/env bash
# npm run models:ensure (the first step of `npm test`): builds, once per machine, the real weights
# the real-weight parity tests read (MiniLM fp32, SmolLM2; `models:fetch -- --tests` leaves out the
# benchmark-only models), so that a fresh clone's `npm test` runs those tests instead of skipping them.
#
# The Python tools venv and the built models live outside the clone, under a key of everything
# that builds them: the next clone on this machine reuses them, a change to the builder or its
# lock builds afresh. Older keys are removed: each holds a few GB. A clone that already has its
# own .venv/models or .cache/models (a developer's `npm run models:fetch`) keeps them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
started=$SECONDS
key="$(cat scripts/models/requirements.lock.txt scripts/models/*.sh scripts/models/*.py \
  scripts/models/kit/*.py scripts/corpus/build.ts | sha256sum | cut -c1-16)"
root="${HUGOT_MODELS_BUILD_CACHE:-${HOME:-/root}/.cache/hugot-stream-models}"
mkdir -p "$root/$key/venv" "$root/$key/models" .venv .cache
find "$root" -mindepth 1 -maxdepth 1 -regextype posix-extended -regex '.*/[0-9a-f]{16}' \
  ! -name "$key" -exec rm -rf {} +
if ! command -v "${PYTHON:-python3}" > /dev/null; then
  echo "models:ensure: building the real weights needs Python 3.11 with venv (Debian: apt-get install python3 python3-venv); set PYTHON to another interpreter" >&2
  exit 1
fi
# Made at its own path, not through the link: its scripts name their Python by the path the
# venv was made at, and the next clone may be in another folder.
[ -x "$root/$key/venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$root/$key/venv"
[ -e .venv/models ] || ln -s "$root/$key/venv" .venv/models
[ -e .cache/models ] || ln -s "$root/$key/models" .cache/models
bash scripts/models/fetch.sh --tests
echo "[models:ensure] real weights ready after $((SECONDS - started)) s"
