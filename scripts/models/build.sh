#!/usr/bin/env bash
# npm run models:build -- rebuilds every committed fixture under test/fixtures/models/ and models/.
# Needs Python 3.11+ and PyPI (for the venv); Node 24 for the corpus step.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/models/venv.sh

NODE="${NODE:-node}"
if [ -x node_modules/.bin/node ]; then NODE=node_modules/.bin/node; fi
# The tokenizers are trained on the corpus, so it comes first.
"$NODE" scripts/corpus/build.ts

python scripts/models/build_fixtures.py "$@"
python scripts/models/build_manifest.py
python scripts/models/graph_operators.py
