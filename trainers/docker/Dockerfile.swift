# rewardkit + ms-swift (GRPO with vLLM colocate, DeepSpeed) for SageMaker training jobs.
# ms-swift pins its own trl/transformers: it gets an image of its own (see DESIGN.md).
# Versions come from trainers/backends.toml: build-and-push.sh passes them as build
# arguments, and tests/trainers/test_backend_versions.py fails when the defaults below
# drift from that file. Build from the repository root:
#   DOCKER_BUILDKIT=1 docker build $(python3 trainers/scripts/backend_versions.py build-args swift) \
#     -f trainers/docker/Dockerfile.swift -t rewardkit-swift:0.1.0 .
ARG BASE_IMAGE=nvidia/cuda:13.0.0-devel-ubuntu24.04
FROM ${BASE_IMAGE}

ARG TORCH_VERSION=2.11.0
ARG SWIFT_VERSION=4.6.0
ARG VLLM_VERSION=0.24.0
ARG DEEPSPEED_VERSION=0.19.8
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

# Python 3.12 with its headers next to the CUDA toolkit: Triton (vLLM) and DeepSpeed build
# kernels at run time. Ubuntu's package versions move with its security updates, so the
# apt packages are not pinned.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-dev python3-venv git \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv

# msgspec: ms-swift 4.x imports it in swift.rlhf_trainers without declaring it
RUN pip install "torch==${TORCH_VERSION}" "vllm==${VLLM_VERSION}" "ms-swift==${SWIFT_VERSION}" \
        "msgspec>=0.18" "pyarrow>=14" "math-verify>=0.7" \
    && pip install --no-build-isolation "deepspeed==${DEEPSPEED_VERSION}"

COPY pyproject.toml README.md /opt/rewardkit/
COPY rewardkit /opt/rewardkit/rewardkit
COPY plugins /opt/rewardkit/plugins
COPY trainers /opt/rewardkit/trainers
# --no-deps for the trainers: keep ms-swift's own trl/transformers pins. Local source
# folders have no version to pin. The build fails if anything moved a tested version.
# hadolint ignore=DL3013
RUN pip install "/opt/rewardkit[math]" "boto3>=1.34" \
    && pip install --no-deps /opt/rewardkit/trainers \
    && for p in /opt/rewardkit/plugins/*/; do pip install "$p"; done \
    && python -c "import importlib.metadata as m; \
got = {p: m.version(p) for p in ('torch', 'ms-swift', 'vllm', 'deepspeed')}; \
want = {'torch': '${TORCH_VERSION}', 'ms-swift': '${SWIFT_VERSION}', \
'vllm': '${VLLM_VERSION}', 'deepspeed': '${DEEPSPEED_VERSION}'}; \
assert got == want, (got, want); import swift.rewards, rewardkit_trainers.sagemaker; print(got)"

WORKDIR /opt/ml/code
ENTRYPOINT ["python", "-m", "rewardkit_trainers.sagemaker"]
