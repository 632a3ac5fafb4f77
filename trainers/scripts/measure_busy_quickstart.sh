#!/bin/bash
# 30 quickstart steps: before (2 threads, default OpenMP waits) and after (the thread plan
# and OMP_WAIT_POLICY=PASSIVE), each alone and beside two busy python loops; one line each
# in measure.out. Usage: cd a scratch folder, then bash <repo>/trainers/scripts/measure_busy_quickstart.sh
# label env... : a 30-step quickstart train, quiet then beside two busy loops
steps=30
sed -e "s#../runs/quickstart#$PWD/meas#" "$(dirname "$0")/../../examples/quickstart.yaml" > meas.yaml
one() { # label busy env...
  label=$1; busy=$2; shift 2
  pids=()
  if [ "$busy" = 1 ]; then
    python3 -c "while True: pass" & pids+=($!)
    python3 -c "while True: pass" & pids+=($!)
    sleep 2
  fi
  rm -rf meas
  start=$(date +%s.%N); l0=$(cut -d' ' -f1 /proc/loadavg)
  env "$@" "$(dirname "$0")/../../.venv/bin/rewardkit" train meas.yaml --max-steps $steps > meas-$label.log 2>&1
  end=$(date +%s.%N); l1=$(cut -d' ' -f1 /proc/loadavg)
  for p in "${pids[@]}"; do kill $p; done
  cp meas/reward_curves.csv curves-$label.csv
  echo "$label busy=$busy wall=$(echo "$end - $start" | bc) load=$l0->$l1 $(grep -o 'done in.*steps' meas-$label.log)" >> measure.out
}
one before-quiet 0 REWARDKIT_THREADS=2 OMP_WAIT_POLICY=
one before-busy 1 REWARDKIT_THREADS=2 OMP_WAIT_POLICY=
one after-quiet 0
one after-busy 1
