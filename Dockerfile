# syntax=docker/dockerfile:1
#
# recsdk-build in a container. Two families of stages:
#
#   cann (the last stage, `runtime`, is the default target): on an official CANN image; the builder runs
#     `recsdk-build all --target cann` and `dist`, the runtime stage installs the bundle into
#     the image's Python. Needs no NPU to build; the toolkit is in the image.
#       docker build --build-arg SOC=Ascend910B1 --build-arg PYTHON_VERSION=3.10 -t recsdk .
#   sim: a plain Python image, no Ascend software at all; anyone can build it.
#       docker build --target sim -t recsdk-sim .
#
# The bundle alone: `--target cann-bundle` or `--target sim-bundle` with
# `--output type=local,dest=out` writes out/recsdk-*.tar.gz. See docs/deploying.md.

# CANN 8.1.RC1 is the toolkit torch_npu 2.6.0 (recsdk.toml's runtime.torch_npu) was released for.
ARG CANN_VERSION=8.1.rc1
# The image's chip family: 910b (Atlas A2, Ascend910B*) or a3 (Atlas A3, Ascend910_93*).
ARG CANN_CHIP=910b
# The cluster's Python (seed 001's version table: 3.10).
ARG PYTHON_VERSION=3.10
ARG CANN_IMAGE=ascendai/cann:${CANN_VERSION}-${CANN_CHIP}-ubuntu22.04-py${PYTHON_VERSION}
ARG SIM_IMAGE=python:${PYTHON_VERSION}-slim-bookworm

# --- sim ----------------------------------------------------------------------------------

FROM ${SIM_IMAGE} AS sim-base
RUN apt-get update \
    && apt-get install -y --no-install-recommends git g++ cmake \
    && rm -rf /var/lib/apt/lists/*

FROM sim-base AS sim-build
ARG PYTHON_VERSION
WORKDIR /src
COPY . /src
RUN python3 -m pip install --no-cache-dir /src \
    && recsdk-build --build-dir /build all --target sim --python "${PYTHON_VERSION}" \
    && recsdk-build --build-dir /build dist --out /bundle

# Only the bundle, for `docker build --target sim-bundle --output type=local,dest=out .`
FROM scratch AS sim-bundle
COPY --from=sim-build /bundle/ /

FROM ${SIM_IMAGE} AS sim
COPY --from=sim-build /bundle /bundle
COPY --from=sim-build /src /opt/recsdk-build
RUN python3 -m pip install --no-cache-dir /opt/recsdk-build \
    && cd /opt/recsdk-build \
    && recsdk-build --build-dir /tmp/recsdk install --bundle /bundle/recsdk-*.tar.gz \
       --sha256-file /bundle/recsdk-*.tar.gz.sha256 --python python3 \
    && rm -rf /tmp/recsdk /root/.cache/pip

# --- cann ---------------------------------------------------------------------------------

FROM ${CANN_IMAGE} AS cann-base
# makeself packs the operator packages; git fetches torchrec.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git makeself cmake g++ \
    && rm -rf /var/lib/apt/lists/*

FROM cann-base AS cann-build
# The SoC the operator packages are compiled for (`recsdk-build ops --soc`).
ARG SOC=Ascend910B1
ARG PYTHON_VERSION
WORKDIR /src
COPY . /src
RUN python3 -m pip install --no-cache-dir /src
# The toolkit's environment (set_env.sh) for every command that builds.
SHELL ["/bin/bash", "-c"]
RUN source /usr/local/Ascend/ascend-toolkit/set_env.sh \
    && recsdk-build --build-dir /build all --target cann --soc "${SOC}" --python "${PYTHON_VERSION}" \
    && recsdk-build --build-dir /build dist --out /bundle

# Only the bundle, for `docker build --target cann-bundle --output type=local,dest=out .`
FROM scratch AS cann-bundle
COPY --from=cann-build /bundle/ /

FROM ${CANN_IMAGE} AS runtime
ARG PYTHON_VERSION
COPY --from=cann-build /bundle /bundle
COPY --from=cann-build /src /opt/recsdk-build
SHELL ["/bin/bash", "-c"]
# install checks SHA256SUMS, installs the pinned runtime (with torch_npu), torchrec --no-deps
# and the wheels, and the operator packages into the toolkit's OPP tree.
RUN python3 -m pip install --no-cache-dir /opt/recsdk-build \
    && source /usr/local/Ascend/ascend-toolkit/set_env.sh \
    && cd /opt/recsdk-build \
    && recsdk-build --build-dir /tmp/recsdk install --bundle /bundle/recsdk-*.tar.gz \
       --sha256-file /bundle/recsdk-*.tar.gz.sha256 --python python3 \
    && rm -rf /tmp/recsdk /root/.cache/pip
