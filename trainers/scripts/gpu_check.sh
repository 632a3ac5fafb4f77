#!/usr/bin/env bash
# The checks that need a GPU, in one go, on a machine with one NVIDIA GPU and PyTorch:
#
#   trainers/scripts/gpu_check.sh [OUT_DIR] [WHEEL_DIR]
#
# 1. what `rewardkit train` detects (GPUs, vLLM) and the run it plans (--dry-run);
# 2. the quickstart trained with TRL on the GPU, then `rewardkit eval` (base vs trained), on
#    the GPU and again on the CPU; the trained model is copied to OUT_DIR/final;
# 3. the reward-model and judge tests with the model on the GPU (device auto picks cuda);
#    GPU_CHECK_JUDGE=0 leaves them out (a short lease: steps 1-2 only).
#
# The repository is installed editable into the current python3 first (no network: an
# offline machine passes a folder of wheels for what its image lacks, installed with
# --no-deps). Outputs (log, curves, report) are copied to OUT_DIR.
set -uo pipefail
out=${1:-gpu-check}
wheels=${2:-}
mkdir -p "$out"
log="$out/gpu-check.log"
exec > >(tee "$log") 2>&1

step() { echo; echo "== $*"; }

step "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'

step "install"
if [ -n "$wheels" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade "$wheels"/*.whl || exit 1
fi
editables=(-e .)
for dist in plugins/*/ sandbox/ trainers/; do editables+=(-e "$dist"); done
python3 -m pip install -q --no-index --no-deps --no-build-isolation "${editables[@]}" || exit 1
python3 -m pip list 2>/dev/null | grep -iE '^(rewardkit|trl|transformers|accelerate|torch|vllm|datasets) '

status=0
step "rewardkit train --dry-run (what is detected and planned)"
python3 -m rewardkit.cli train examples/quickstart.yaml --dry-run || status=1

step "rewardkit train on the GPU"
start=$(date +%s)
python3 -m rewardkit.cli train examples/quickstart.yaml || status=1
echo "train took $(( $(date +%s) - start )) s"

step "rewardkit eval (base vs trained)"
python3 -m rewardkit.cli eval examples/quickstart.yaml || status=1
cp runs/quickstart/*.csv runs/quickstart/*.png runs/quickstart/*.html "$out"/ 2>/dev/null

step "rewardkit eval of the same models on this machine's CPU (GPU sampling vs the weights)"
CUDA_VISIBLE_DEVICES= python3 -m rewardkit.cli eval examples/quickstart.yaml || status=1
# the trained tiny model (under 1 MB) comes back too, to evaluate elsewhere
mkdir -p "$out/final" && cp runs/quickstart/final/* "$out/final/" 2>/dev/null

step "reward model and judge tests, model on the GPU"
if [ "${GPU_CHECK_JUDGE:-1}" = 0 ]; then
  echo "left out (GPU_CHECK_JUDGE=0)"
else
  python3 -m pytest -q -p no:cacheprovider tests/plugins/judge -x || status=1
fi

step "done: status $status"
exit $status
