#!/usr/bin/env bash
# The device call's flow (bench/device/run.sh) on this machine's CPU, sized to finish in minutes on
# two cores: every script it runs, with the same arguments but few texts, prompts and tokens, on
# the models that `npm run models:ensure` builds (MiniLM, SmolLM2). Run it before spending GPU time;
# it must end with every step's exit 0. Usage: bash bench/device/dry-run.sh (files in $OUT or
# /tmp/device-dry-run).
set -uo pipefail
cd "$(dirname "$0")/../.."
export OUT=${OUT:-/tmp/device-dry-run}
rm -rf "$OUT" && mkdir -p "$OUT"
export BENCH_MODEL=${BENCH_MODEL:-smollm2}
export CHECK_PROMPTS=4 CHECK_NEW_TOKENS=8
export THROUGHPUT_ARGS="--only embedding,fp16 --texts 64 --passes 1 --cuda-threads 2 --no-token-pricing --raw-workers 1 --tjs-batch-sizes 32 --tjs-texts 32"
export CPU_TEXTS=32 GEN_REQUESTS=6 GEN_ARRIVAL_MS=200 GEN_NEW_TOKENS=8 GEN_SEQUENTIAL=2
export CHECKS_S=300 THROUGHPUT_S=420 GENERATE_S=420
bash bench/device/run.sh cpu
grep -E '^(checks|throughput|generate) exit' "$OUT/run.log"
! grep -E '^(checks|throughput|generate) exit [^0]' "$OUT/run.log"
