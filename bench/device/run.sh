#!/usr/bin/env bash
# On the GPU machine: assemble the parts that bench/device/pack.sh made (copied to /tmp/parts by
# the staging calls), refill the models' weights, check the CUDA libraries, check the device paths
# (bench/device/checks.ts: pooling on the device, the resident decode cache) and run the
# benchmarks on cuda:0 (throughput: MiniLM fp32 and its fp16 copy; then generation).
# Usage: bash bench/device/run.sh [cuda:0|cpu] [STEPS]; `cpu` is the dry run of the same flow
# (bench/device/dry-run.sh sizes it for a 2-core machine). STEPS is a comma-separated subset of
# unpack,checks,throughput,generate (default all four, in that order; unpack is skipped once done),
# so that the work can be split over calls made back to back on the warm machine: a machine that
# stops answering then costs one step's files, not all of them (docs/gpu.md, "The next GPU run").
# Each step has a limit (checks 75 s, throughput 270 s, generate 170 s). On a GPU the throughput
# run is cut to the floors' figures (MiniLM fp32 against both raw contenders, its fp16 copy) and
# one transformers.js trial; THROUGHPUT_ARGS replaces that choice. Files go to $OUT: run.log,
# check.txt, monitor.log (memory and GPU every 10 s, and a guard against running out of memory) and each step's lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
device=${1:-cuda:0}
steps=",${2:-unpack,checks,throughput,generate},"
out=${OUT:-/tmp/out}
mkdir -p "$out"
exec > >(tee -a "$out/run.log") 2>&1
python=${PYTHON:-python3}
parts=${PARTS:-/tmp/parts}
wants() { [[ $steps == *",$1,"* ]]; }

# Logs memory and GPU use every 10 s, and stops the benchmarks if the machine's memory runs low
# (MemAvailable under MIN_AVAILABLE_MIB, default 4096): a machine out of memory stops answering
# and its call returns nothing, a killed step loses only its own lines.
(i=0
while true; do
  available=$(awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo)
  if [ "${available:-0}" -lt "${MIN_AVAILABLE_MIB:-4096}" ]; then
    echo "$(date +%T) memory low: $available MiB available, stopping the step"
    # timeout runs its command in a process group of its own: the step's whole tree goes.
    for pid in $(pgrep -P $$ -x timeout); do kill -9 -- "-$pid" 2>/dev/null; done
  fi
  if [ $((i % 5)) -eq 0 ]; then
    echo "$(date +%T) available ${available} MiB, gpu $(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader 2>/dev/null || echo -)"
  fi
  i=$((i + 1))
  sleep 2
done) >"$out/monitor.log" 2>&1 &
monitor=$!
trap 'kill $monitor 2>/dev/null' EXIT

if wants unpack && [ ! -d node_modules/node ]; then
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
  rm -f /tmp/all /tmp/runtime.tar.xz /tmp/cuda.so.xz
  for m in all-MiniLM-L6-v2 distilbert-base-classifier llama-100m; do
    "$python" bench/device/weights.py refill ".cache/models/$m"
  done
fi
node=node_modules/node/bin/node
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
nproc
$node --version
$node scripts/gpu/install.ts --check >"$out/check.txt"
cat "$out/check.txt"
export LD_LIBRARY_PATH="$(grep -o 'LD_LIBRARY_PATH=[^$]*' "$out/check.txt" | head -1 | cut -d= -f2 | sed 's/:$//')${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
if wants checks; then
  timeout "${CHECKS_S:-75}" $node bench/device/checks.ts --device "$device" >"$out/checks.jsonl"
  echo "checks exit $?"
  cat "$out/checks.jsonl"
fi
if wants throughput; then
  gpu_args="--only embedding,fp16 --cuda-threads 8,16 --no-token-pricing --raw-workers 2 --tjs-batch-sizes 64 --tjs-texts 600"
  timeout "${THROUGHPUT_S:-270}" $node bench/throughput.ts --device "$device" --passes 3 \
    --cpu-texts "${CPU_TEXTS:-1000}" ${THROUGHPUT_ARGS-$gpu_args} >"$out/throughput.json"
  echo "throughput exit $?"
  cat "$out/throughput.json"
  cp .cache/bench/throughput-device.json "$out/" 2>/dev/null
fi
if wants generate; then
  BENCH_REQUESTS=${GEN_REQUESTS:-128} BENCH_ARRIVAL_MS=${GEN_ARRIVAL_MS:-1000} \
    BENCH_NEW_TOKENS=${GEN_NEW_TOKENS:-64} BENCH_SEQUENTIAL=${GEN_SEQUENTIAL:-16} \
    timeout "${GENERATE_S:-170}" $node bench/generate.ts --device "$device" --passes mixed >"$out/generate.jsonl"
  echo "generate exit $?"
  cat "$out/generate.jsonl"
fi
