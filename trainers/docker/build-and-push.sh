#!/usr/bin/env bash
# Build one rewardkit training image and push it to ECR.
#   trainers/docker/build-and-push.sh BACKEND [TAG]     BACKEND: trl | swift | verl | easyr1
# Needs: docker (BuildKit), the AWS CLI v2 with credentials; AWS_REGION or a configured
# default region. Prints the image URI to put under sagemaker.images.<backend>.
# The versions installed are the tested ones of trainers/backends.toml, passed as --build-arg.
set -euo pipefail
backend=${1:?usage: $0 trl|swift|verl|easyr1 [tag]}
tag=${2:-0.1.0}
root=$(cd "$(dirname "$0")/../.." && pwd)
region=${AWS_REGION:-$(aws configure get region)}
account=$(aws sts get-caller-identity --query Account --output text)
repo="rewardkit-${backend}"
registry="${account}.dkr.ecr.${region}.amazonaws.com"
image="${registry}/${repo}:${tag}"
mapfile -t build_args < <(python3 "$root/trainers/scripts/backend_versions.py" build-args "$backend")

aws ecr describe-repositories --repository-names "$repo" --region "$region" >/dev/null 2>&1 \
  || aws ecr create-repository --repository-name "$repo" --region "$region" \
       --image-scanning-configuration scanOnPush=true >/dev/null
aws ecr get-login-password --region "$region" \
  | docker login --username AWS --password-stdin "$registry"
DOCKER_BUILDKIT=1 docker build --platform linux/amd64 "${build_args[@]}" \
  -f "$root/trainers/docker/Dockerfile.${backend}" -t "$image" "$root"
docker push "$image"
echo "$image"
