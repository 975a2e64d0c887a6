#!/usr/bin/env bash
# npm run models:fetch -- fills .cache/models/ with real and benchmark-sized models (gitignored).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/models/venv.sh

NODE="${NODE:-node}"
if [ -x node_modules/.bin/node ]; then NODE=node_modules/.bin/node; fi
if [ ! -f .cache/corpus/spam-assassin.jsonl ]; then "$NODE" scripts/corpus/build.ts; fi

python scripts/models/fetch_models.py "$@"
