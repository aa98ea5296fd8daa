#!/usr/bin/env bash
# Rerun labs in parallel streams, each stream one lab at a time, and log what each did.
#
#   scripts/rerun-labs.sh [--streams N] [--plan] [LAB...]
#
# With no LAB, reruns every lab whose results `tangle --check` reports stale. Labs are dealt
# to the streams longest first (by the times below, measured in docs/labs.md) onto the stream
# with the least work, so the streams end close together. Each lab runs `scripts/lab.sh LAB`
# and writes labs/results/LAB.json only if the code it hashed at the start is still the code
# at the end: do not check out another branch in this working tree while it runs (use
# `git worktree add` for other work), or every lab then running refuses to write.
# Logs: target/labs/rerun/streamN.log (start, end, exit code, seconds) and LAB.out. `--plan`
# prints the streams and runs nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
streams=2
plan_only=0
labs=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --plan) plan_only=1; shift ;;
    --streams) streams=${2:?--streams needs a number}; shift 2 ;;
    -*) echo "rerun-labs: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) labs+=("$1"); shift ;;
  esac
done
if [ ${#labs[@]} -eq 0 ]; then
  mapfile -t labs < <(cargo run -q -p tangle -- --check 2>&1 |
    sed -n 's|^stale: labs/results/\([a-z_0-9]*\)\.json.*|\1|p' | sort -u)
fi
if [ ${#labs[@]} -eq 0 ]; then
  echo "rerun-labs: no stale lab"
  exit 0
fi
# Seconds per lab on this 2-core machine, one lab per core (docs/labs.md); unknown labs 600.
cost() {
  case "$1" in
    distillation) echo 3400 ;; noisy_verifier) echo 2760 ;; offpolicy) echo 2700 ;;
    regularizers) echo 3300 ;; capstone) echo 2200 ;; grpo_family) echo 2000 ;;
    multi_turn) echo 1700 ;; preferences) echo 1700 ;; ppo_vs_reinforce) echo 1500 ;;
    curriculum) echo 1200 ;; heldout_skill) echo 900 ;; reward_hacking) echo 890 ;;
    kl_matched) echo 800 ;; lr_validation) echo 510 ;; grpo_seeds) echo 410 ;;
    debugging) echo 270 ;; example) echo 1 ;; *) echo 600 ;;
  esac
}
mapfile -t sorted < <(for lab in "${labs[@]}"; do echo "$(cost "$lab") $lab"; done | sort -rn | cut -d' ' -f2)
declare -a load plan
for ((s = 0; s < streams; s++)); do load[s]=0; plan[s]=""; done
for lab in "${sorted[@]}"; do
  best=0
  for ((s = 1; s < streams; s++)); do [ "${load[s]}" -lt "${load[best]}" ] && best=$s; done
  load[best]=$((load[best] + $(cost "$lab")))
  plan[best]="${plan[best]} $lab"
done
if [ "$plan_only" = 1 ]; then
  for ((s = 0; s < streams; s++)); do echo "stream $s (about $((load[s] / 60)) min):${plan[s]}"; done
  exit 0
fi
logs="$root/target/labs/rerun"
mkdir -p "$logs"
for ((s = 0; s < streams; s++)); do
  [ -z "${plan[s]}" ] && continue
  echo "stream $s (about $((load[s] / 60)) min):${plan[s]}"
  (
    for lab in ${plan[s]}; do
      start=$(date +%s)
      echo "$(date +%T) start $lab" >> "$logs/stream$s.log"
      rc=0
      scripts/lab.sh "$lab" > "$logs/$lab.out" 2>&1 || rc=$?
      echo "$(date +%T) done $lab rc=$rc $(($(date +%s) - start))s" >> "$logs/stream$s.log"
    done
  ) &
done
echo "logs: $logs; waiting for the streams"
wait
grep -h "done" "$logs"/stream*.log | tail -n ${#labs[@]}
