#!/usr/bin/env bash
# On the GPU machine: assemble the parts that bench/device/pack.sh made (copied to /tmp/parts by
# the staging calls), refill the models' weights, check the CUDA libraries, check the device paths
# (bench/device/checks.ts: pooling on the device, the resident decode cache) and run the
# benchmarks on cuda:0 (throughput: MiniLM fp32, its fp16 copy, DistilBERT; then generation).
# Everything worth keeping goes to $OUT. Usage: bash bench/device/run.sh [cuda:0|cpu]; `cpu` is
# the dry run of the same flow (bench/device/dry-run.sh sizes it for a 2-core machine). The step
# limits (75 + 270 + 170 s) keep the call under the device tool's 600 s with the unpacking. On a GPU
# the throughput run is cut to the floors' figures (MiniLM fp32 against both raw contenders, its
# fp16 copy) and one transformers.js trial; THROUGHPUT_ARGS replaces that choice.
set -uo pipefail
cd "$(dirname "$0")/../.."
device=${1:-cuda:0}
out=${OUT:-/tmp/out}
mkdir -p "$out"
exec > >(tee -a "$out/run.log") 2>&1
python=${PYTHON:-python3}
parts=${PARTS:-/tmp/parts}
if [ ! -d node_modules/node ]; then
  read -r runtime_size cuda_size <"$(ls "$parts"/*/sizes | head -1)"
  # part.0, part.1, ... in order, wherever the staging calls put their folders.
  for part in $(ls "$parts"/*/part.* | awk -F'part[.]' '{print $NF, $0}' | sort -n | cut -d' ' -f2); do
    cat "$part"
  done >/tmp/all
  head -c "$runtime_size" /tmp/all >/tmp/runtime.tar.xz
  tail -c "$cuda_size" /tmp/all >/tmp/cuda.so.xz
  bin=node_modules/onnxruntime-node/bin/napi-v6/linux/x64
  "$python" - <<'PY'
import lzma, shutil, tarfile
with tarfile.open("/tmp/runtime.tar.xz") as t:
    t.extractall(".")
with lzma.open("/tmp/cuda.so.xz") as src, open("/tmp/libonnxruntime_providers_cuda.so", "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 24)
PY
  mv libonnxruntime_providers_shared.so libonnxruntime_providers_tensorrt.so "$bin/"
  mv /tmp/libonnxruntime_providers_cuda.so "$bin/"
  for m in all-MiniLM-L6-v2 distilbert-base-classifier llama-100m; do
    "$python" bench/device/weights.py refill ".cache/models/$m"
  done
fi
node=node_modules/node/bin/node
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
nproc
$node --version
$node scripts/gpu/install.ts --check | tee "$out/check-before.txt"
export LD_LIBRARY_PATH="$(grep -o 'LD_LIBRARY_PATH=[^$]*' "$out/check-before.txt" | head -1 | cut -d= -f2 | sed 's/:$//')${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
$node scripts/gpu/install.ts --check | tee "$out/check-after.txt"
timeout "${CHECKS_S:-75}" $node bench/device/checks.ts --device "$device" >"$out/checks.jsonl"
echo "checks exit $?"
cat "$out/checks.jsonl"
gpu_args="--only embedding,fp16 --cuda-threads 8,16 --no-token-pricing --raw-workers 2 --tjs-batch-sizes 64 --tjs-texts 600"
timeout "${THROUGHPUT_S:-270}" $node bench/throughput.ts --device "$device" --passes 3 \
  --cpu-texts "${CPU_TEXTS:-1000}" ${THROUGHPUT_ARGS-$gpu_args} >"$out/throughput.json"
echo "throughput exit $?"
cat "$out/throughput.json"
cp .cache/bench/throughput-device.json "$out/" 2>/dev/null
BENCH_REQUESTS=${GEN_REQUESTS:-128} BENCH_ARRIVAL_MS=${GEN_ARRIVAL_MS:-1000} \
  BENCH_NEW_TOKENS=${GEN_NEW_TOKENS:-64} BENCH_SEQUENTIAL=${GEN_SEQUENTIAL:-16} \
  timeout "${GENERATE_S:-170}" $node bench/generate.ts --device "$device" --passes mixed >"$out/generate.jsonl"
echo "generate exit $?"
cat "$out/generate.jsonl"
