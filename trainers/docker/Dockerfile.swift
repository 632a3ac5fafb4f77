# rewardkit + ms-swift (GRPO with vLLM) for SageMaker training jobs.
# Build from the repository root:
#   DOCKER_BUILDKIT=1 docker build -f trainers/docker/Dockerfile.swift -t rewardkit-swift:0.1.0 .
# ms-swift pins its own trl/transformers: it gets an image of its own (see DESIGN.md).
ARG BASE_IMAGE=pytorch/pytorch:2.8.0-cuda12.8-cudnn9-devel
FROM ${BASE_IMAGE}

ARG SWIFT_VERSION=3.9.3
ARG VLLM_VERSION=0.11.0
ARG DEEPSPEED_VERSION=0.17.6
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN pip install "ms-swift==${SWIFT_VERSION}" "vllm==${VLLM_VERSION}" \
        "deepspeed==${DEEPSPEED_VERSION}" "math-verify>=0.7"

COPY pyproject.toml README.md /opt/rewardkit/
COPY rewardkit /opt/rewardkit/rewardkit
COPY plugins /opt/rewardkit/plugins
COPY trainers /opt/rewardkit/trainers
# --no-deps for the trainers extras: keep ms-swift's own trl/transformers pins
RUN pip install "/opt/rewardkit[math]" \
    && pip install --no-deps /opt/rewardkit/trainers \
    && pip install "boto3>=1.34" \
    && for p in /opt/rewardkit/plugins/*/; do pip install "$p"; done \
    && python -c "import swift, rewardkit_trainers.sagemaker; print('ms-swift', swift.__version__)"

WORKDIR /opt/ml/code
ENTRYPOINT ["python", "-m", "rewardkit_trainers.sagemaker"]
