# The CUDA worker image (docs/docker.md, docs/gpu.md): `cuda:0` shards on an NVIDIA GPU with a
# driver for CUDA 13 (580 or newer) and the NVIDIA Container Toolkit on the host. Build from the
# repository root, which is the context the root .dockerignore trims:
#   docker build -f docker/cuda.Dockerfile -t hugot-stream:cuda .
#   docker run --rm --gpus all -v "$PWD/out:/app/out" hugot-stream:cuda
ARG NODE_IMAGE=node:24-bookworm-slim
# CUDA 13 and cuDNN 9: what PyPI's onnxruntime-gpu 1.30 provider library links against
# (libcublasLt.so.13, libcudart.so.13, libcudnn.so.9). The runtime flavour already has them on
# the loader path, so no LD_LIBRARY_PATH is set.
ARG CUDA_IMAGE=nvidia/cuda:13.0.1-cudnn-runtime-ubuntu24.04

FROM ${NODE_IMAGE} AS build
# Skip onnxruntime-node's own provider download (NuGet, and a CUDA 12 build): gpu:install below
# takes the CUDA 13 provider from PyPI's onnxruntime-gpu wheel of the same version instead.
ENV ONNXRUNTIME_NODE_INSTALL=skip
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
# Every other platform's onnxruntime-node and tokenizers native libraries out, 301.7 MiB on x64
# (docker/Dockerfile says why and how). gpu:install below adds to linux/<arch>, which stays.
RUN npm ci --omit=dev && npm cache clean --force \
  && arch="$(node -p process.arch)" \
  && ort=node_modules/onnxruntime-node/bin \
  && test -f "$ort/napi-v6/linux/$arch/onnxruntime_binding.node" \
  && test -f "node_modules/tokenizers/tokenizers.linux-$arch-gnu.node" \
  && find "$ort" -mindepth 3 -maxdepth 3 ! -path "$ort/*/linux/$arch" -exec rm -rf {} + \
  && find "$ort" -mindepth 1 -type d -empty -delete \
  && find node_modules/tokenizers -maxdepth 1 -name '*.node' ! -name "tokenizers.linux-$arch-gnu.node" -delete
COPY scripts/gpu ./scripts/gpu
COPY src ./src
# Puts libonnxruntime_providers_cuda.so and libonnxruntime_providers_shared.so beside
# node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1; Node and network
# only, no Python. Its download cache stays in this stage.
RUN npm run gpu:install

FROM ${CUDA_IMAGE}
# tini as PID 1 passes SIGTERM on to node (which then drains: src/cli/run-command.ts) and reaps
# zombies, so `docker stop` ends the worker cleanly without `--init`. Ubuntu's `ubuntu` user
# holds uid 1000; it gives way to `node` so both images write out/ as 1000:1000.
# hadolint ignore=DL3008
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/* \
  && (userdel --remove ubuntu 2>/dev/null || true) \
  && groupadd --gid 1000 node \
  && useradd --uid 1000 --gid node --shell /bin/bash --create-home node
# Node 24 from the official image: one static-enough binary (glibc and libstdc++ only, both in
# Ubuntu 24.04); npm is not needed at run time.
COPY --from=build /usr/local/bin/node /usr/local/bin/node
# HUGOT__telemetry__port turns the telemetry server on (off in the config's defaults) for the
# HEALTHCHECK; it wins over any config file's telemetry.port.
ENV NODE_ENV=production \
  ONNXRUNTIME_NODE_INSTALL=skip \
  HUGOT__telemetry__port=9464
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
# package.json carries "type": "module", which Node needs to run src/**/*.ts as ES modules.
COPY package.json ./
COPY bin ./bin
COPY src ./src
COPY config ./config
COPY models ./models
# The same small committed models and inputs as docker/Dockerfile: the example configs run here
# as they do in the CPU image.
COPY test/fixtures/models/bert-text-classification ./test/fixtures/models/bert-text-classification
COPY test/fixtures/models/bert-token-classification ./test/fixtures/models/bert-token-classification
COPY test/fixtures/models/llama-causal-lm ./test/fixtures/models/llama-causal-lm
COPY test/fixtures/models/sklearn-decision-tree-iris ./test/fixtures/models/sklearn-decision-tree-iris
COPY test/fixtures/tabular/iris-rows.jsonl ./test/fixtures/tabular/iris-rows.jsonl
# What config/demo-cuda.yaml reads (its default HUGOT_DEMO_INPUT); it writes under out/.
COPY test/fixtures/corpus/sample.jsonl ./test/fixtures/corpus/sample.jsonl
RUN mkdir -p /app/out && chown node:node /app/out
# `node` by number, so runAsNonRoot (Kubernetes) can check it without reading /etc/passwd.
USER 1000:1000
EXPOSE 9464
# Liveness, not readiness: /readyz is also red while models load onto the GPU, while a broker
# reconnects and while draining. Node's fetch: the base image has no curl.
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.HUGOT__telemetry__port || 9464) + '/livez').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "node", "bin/hugot-stream.js"]
# The demo on the first GPU: config/demo.yaml with `shards: ['cuda:0']`.
CMD ["run", "--config", "config/demo-cuda.yaml"]
