#!/usr/bin/env bash
# Create the per-backend virtual environments used by tests/trainers (and by people).
#
#   .venv-swift  ms-swift 4.x (it pins its own, older trl)
#   .venv-verl   verl 0.9.x (with the transformers range it accepts)
#   .venv        (only when asked: `... trl`) current TRL + transformers, peft, datasets,
#                matplotlib next to the core, for `rewardkit train` / `make demo`
#
# Each gets the CPU build of torch first (so pip never pulls a CUDA build), then the
# backend, then rewardkit (core) and rewardkit-trainers in editable mode.
#
# Idempotent: a venv whose stamp matches the wanted spec and whose imports work is left
# alone (a second run takes about a second). Pass backend names to limit the work:
#   trainers/scripts/make_backend_venvs.sh            # both
#   trainers/scripts/make_backend_venvs.sh swift      # only .venv-swift
#   trainers/scripts/make_backend_venvs.sh trl swift verl   # all three
# The backend versions are the tested ones of trainers/backends.toml (read through
# trainers/scripts/backend_versions.py), the same the extras accept and the images pin.
# Environment: PYTHON (default python3.11), TORCH_SPEC (default torch==2.13.0, the CPU
# build), SWIFT_SPEC / VERL_SPEC / TRL_SPEC to try other versions (default: backends.toml).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYTHON="${PYTHON:-python3.11}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
pins() { "$PYTHON" "$ROOT/trainers/scripts/backend_versions.py" pins "$1"; }
SWIFT_SPEC="${SWIFT_SPEC:-$(pins swift)}"
VERL_SPEC="${VERL_SPEC:-$(pins verl)}"
TRL_SPEC="${TRL_SPEC:-$(pins trl)}"

# backend -> "pip specs|import check"
# (msgspec: ms-swift 4.x imports it in swift.rlhf_trainers without declaring it;
#  cachetools, uvicorn, fastapi: verl 0.9's agent loop imports them without declaring them)
declare -A SPECS=(
  [trl]="-e $ROOT/trainers[trl] $TRL_SPEC|import trl, peft, datasets, matplotlib"
  [swift]="$SWIFT_SPEC msgspec pyarrow|import swift, swift.rewards, swift.rlhf_trainers.utils"
  [verl]="$VERL_SPEC pyarrow cachetools uvicorn fastapi|import verl, verl.trainer.ppo.reward, verl.experimental.agent_loop"
)

# pip, without the warnings about this machine's absent local index folders
pip_quiet() {
  "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}

make_venv() {
  local name="$1"
  local venv="$ROOT/.venv-$name"
  [[ "$name" == trl ]] && venv="$ROOT/.venv"
  local specs="${SPECS[$name]%%|*}"
  local check="${SPECS[$name]#*|}"
  local stamp="$venv/.rewardkit-stamp"
  local want="$TORCH_SPEC $specs"
  local tools_check=", rewardkit_tools"
  [[ "$name" == trl ]] && tools_check=""

  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] \
      && "$venv/bin/python" -c "$check; import rewardkit, rewardkit_trainers$tools_check" 2>/dev/null; then
    echo "[$name] $venv is up to date"
    return 0
  fi
  echo "[$name] building $venv ($want)"
  [[ -x "$venv/bin/python" ]] || "$PYTHON" -m venv "$venv"
  local pip=(pip_quiet "$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
  "${pip[@]}" "$TORCH_SPEC"
  if [[ "$name" == trl ]]; then
    # the core venv: rewardkit with its dependencies first, then the trainers' [trl] extra
    "${pip[@]}" -e "$ROOT" "$TORCH_SPEC"
    # shellcheck disable=SC2086
    "${pip[@]}" $specs "$TORCH_SPEC"
  else
    # shellcheck disable=SC2086
    "${pip[@]}" $specs "$TORCH_SPEC"
    # rewardkit-tools: the multi-turn tests score trajectories with the tool rewards
    "${pip[@]}" --no-deps -e "$ROOT" -e "$ROOT/trainers" -e "$ROOT/plugins/rewardkit-tools"
    # the core's own dependencies, without letting pip move the backend's pins
    "${pip[@]}" "pydantic>=2.7,<3" "pluggy>=1.5" "PyYAML>=6.0" "rich>=13" pytest
  fi
  "$venv/bin/python" -c "$check; import rewardkit, rewardkit_trainers$tools_check"
  echo "$want" > "$stamp"
  echo "[$name] ready"
}

targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(swift verl)
for t in "${targets[@]}"; do
  [[ -n "${SPECS[$t]:-}" ]] || { echo "unknown backend: $t (trl|swift|verl)" >&2; exit 2; }
  make_venv "$t"
done
