#!/usr/bin/env bash
# What the image build's pruning of other platforms' native libraries removes (docker/Dockerfile),
# measured on this checkout's node_modules: one JSON line (docs/docker.md quotes it).
set -euo pipefail
cd "$(dirname "$0")/../.."
arch="$(node_modules/.bin/node -p process.arch)"
ort=node_modules/onnxruntime-node/bin
ort_all=$(du -sb "$ort" | cut -f1)
ort_kept=$(du -sb "$ort/napi-v6/linux/$arch" | cut -f1)
tok_all=$(du -cb node_modules/tokenizers/*.node | tail -1 | cut -f1)
tok_kept=$(du -b "node_modules/tokenizers/tokenizers.linux-$arch-gnu.node" | cut -f1)
removed=$((ort_all - ort_kept + tok_all - tok_kept))
printf '{"docker_binaries":{"arch":"%s","onnxruntime_node_removed_bytes":%d,"onnxruntime_node_kept_bytes":%d,"tokenizers_removed_bytes":%d,"tokenizers_kept_bytes":%d,"removed_mib":%.1f}}\n' \
  "$arch" $((ort_all - ort_kept)) "$ort_kept" $((tok_all - tok_kept)) "$tok_kept" "$(echo "$removed / 1048576" | bc -l)"
