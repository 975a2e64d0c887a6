#!/usr/bin/env bash
# Packs what a GPU run needs and this repository does not track into parts small enough for the
# device tool (each call carries at most 64 MiB, the tracked tree included): .device/p1 ... pN.
# Needs `npm ci`, `npm run models:fetch`, `npm run models:ensure` (MiniLM's fp16 copy), `npm run corpus:build` and `npm run gpu:install -- --prefix
# .device/gpu` done first (the provider is taken from there, so the repo's own node_modules keeps
# its CPU-only state). Usage: bash bench/device/pack.sh [PART_MIB]
set -euo pipefail
cd "$(dirname "$0")/../.."
part_mib=${1:-50}
python=${PYTHON:-.venv/models/bin/python}
work=.device/work
rm -rf "$work" .device/p[0-9]*
mkdir -p "$work/.cache/models"
for m in all-MiniLM-L6-v2 distilbert-base-classifier llama-100m; do
  "$python" bench/device/weights.py strip ".cache/models/$m" "$work/.cache/models/$m"
done
rm -f "$work/.cache/models/all-MiniLM-L6-v2/model_quantized.onnx"
mkdir -p "$work/.cache/corpus" && cp .cache/corpus/spam-assassin.jsonl "$work/.cache/corpus/"
bin=node_modules/onnxruntime-node/bin/napi-v6/linux/x64
# Development tools, other platforms' binaries and the web runtime stay behind, and so do
# node-llama-cpp's prebuilt engines (680 MB): the device run does not time that contender, and
# the package itself, which bench/generate.ts imports, loads them only when asked to.
tar -cf - \
  --exclude="$bin/libonnxruntime_providers_*" \
  --exclude='node_modules/onnxruntime-node/bin/napi-v6/darwin' \
  --exclude='node_modules/onnxruntime-node/bin/napi-v6/win32' \
  --exclude='node_modules/onnxruntime-node/bin/napi-v6/linux/arm64' \
  --exclude='node_modules/onnxruntime-web/dist' \
  --exclude='node_modules/tokenizers/tokenizers.[!l]*' \
  --exclude='node_modules/tokenizers/tokenizers.linux-a*' \
  --exclude='node_modules/tokenizers/tokenizers.linux-x64-musl.node' \
  --exclude='node_modules/typescript' --exclude='node_modules/@typescript-eslint' \
  --exclude='node_modules/eslint*' --exclude='node_modules/@eslint' \
  --exclude='node_modules/prettier' --exclude='node_modules/@rolldown' \
  --exclude='node_modules/lightningcss*' --exclude='node_modules/@stdlib' \
  --exclude='node_modules/testcontainers' --exclude='node_modules/@testcontainers' \
  --exclude='node_modules/ssh2' --exclude='node_modules/cpu-features' \
  --exclude='node_modules/@types' --exclude='*.map' \
  --exclude='node_modules/@node-llama-cpp' \
  node_modules -C "$work" .cache \
  -C "$PWD/.device/gpu/$bin" libonnxruntime_providers_shared.so libonnxruntime_providers_tensorrt.so \
  | xz -6 -T0 >"$work/runtime.tar.xz"
xz -6 -T0 -c ".device/gpu/$bin/libonnxruntime_providers_cuda.so" >"$work/cuda.so.xz"
cat "$work/runtime.tar.xz" "$work/cuda.so.xz" >"$work/all"
sizes="$(stat -c %s "$work/runtime.tar.xz") $(stat -c %s "$work/cuda.so.xz")"
echo "$sizes" >"$work/sizes"
split -b "${part_mib}M" -d -a 1 "$work/all" "$work/part."
i=1
for part in "$work"/part.*; do
  mkdir -p ".device/p$i" && mv "$part" ".device/p$i/" && cp "$work/sizes" ".device/p$i/"
  i=$((i + 1))
done
rm -rf "$work"
ls -la .device/p*/
