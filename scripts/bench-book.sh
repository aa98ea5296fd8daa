#!/usr/bin/env bash
# Measure the book's budgets (DESIGN.md) on this machine:
#   cold      full book check with an empty chapter build dir (libtorch already installed)
#   no-op     full book check with nothing changed (the content-hash cache)
#   warm      full book check with --force (every chapter built and run, nothing compiled
#             but the chapters), with --jobs 1 and with the default (one program per core)
#   re-check  one chapter after editing one run block (a comment appended), then restored
#   run       each chapter's build and run time in the warm --jobs 1 check, as the checker
#             reports them, against the 60 s budget for one chapter's program
# Usage: scripts/bench-book.sh [--skip-cold] [CHAPTER-FOR-RECHECK]
# With --skip-cold the cache is brought up to date first (untimed), so "no-op" is one.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '2,11s/^# \{0,1\}//p' "$0"; }
skip_cold=0
chapter=02
for arg in "$@"; do
  case $arg in
    -h | --help) usage; exit 0 ;;
    --skip-cold) skip_cold=1 ;;
    -*) echo "bench-book: unknown option $arg" >&2; usage >&2; exit 2 ;;
    *) chapter=$arg ;;
  esac
done
if ! ls book/src/"$chapter"-*.md >/dev/null 2>&1; then
  echo "bench-book: no chapter $chapter in book/src (give its number, e.g. 02)" >&2
  exit 2
fi
cargo build -q -p checker
check=(target/debug/checker)
now() { date +%s.%N; }
secs() { python3 -c "print(f\"{$2 - $1:.1f}\")"; }
# A timed check: its report to LOG, its progress lines to LOG.err; a failure shows both.
timed_check() {
  local log=$1
  shift
  if ! "${check[@]}" "$@" > "$log" 2> "$log.err"; then
    echo "bench-book: \`checker $*\` failed; nothing measured:" >&2
    tail -n 25 "$log" "$log.err" >&2
    exit 1
  fi
}

if [ $skip_cold = 0 ]; then
  rm -rf target/checker
  t0=$(now); timed_check target/bench-cold.log --chapters all; t1=$(now)
  echo "cold full check:      $(secs $t0 $t1) s (budget 1500 s)"
  grep -E '^chapter ' target/bench-cold.log | sed 's/^/  /'
else
  t0=$(now); timed_check target/bench-update.log --chapters all; t1=$(now)
  echo "(cache brought up to date first, untimed in the budgets: $(secs $t0 $t1) s)"
fi
t0=$(now); timed_check target/bench-noop.log --chapters all; t1=$(now)
echo "no-op full check:     $(secs $t0 $t1) s (budget 10 s)"
for jobs in 1 "$(nproc)"; do
  log=target/bench-warm-jobs$jobs.log
  t0=$(now); timed_check "$log" --chapters all --force --jobs "$jobs"; t1=$(now)
  echo "warm --force, --jobs $jobs: $(secs $t0 $t1) s"
done
# One chapter's program alone on the machine: the --jobs 1 run is the budget's measure.
echo "run times, warm --jobs 1 (budget 60 s per chapter's program):"
python3 - target/bench-warm-jobs1.log <<'PY'
import re, sys
total = 0.0
for line in open(sys.argv[1]):
    m = re.match(r"chapter (\d+) .*\(build ([\d.]+) s, run ([\d.]+) s\)", line)
    if m:
        run = float(m.group(3)); total += run
        flag = "  OVER BUDGET" if run > 60 else ""
        print(f"  chapter {m.group(1)}  build {float(m.group(2)):5.1f} s  run {run:5.1f} s{flag}")
print(f"  all chapters' programs: {total:.1f} s")
PY

file=$(ls book/src/"$chapter"-*.md)
cp "$file" target/bench-chapter.bak
trap 'cp target/bench-chapter.bak "$file"' EXIT
# Append a comment to the last line of the first run block: the program changes, outputs do not.
python3 - "$file" <<'PY'
import sys, re
p = sys.argv[1]; s = open(p).read()
for m in re.finditer(r"```rust\n(.*?)```", s, re.S):
    if not m.group(1).startswith("//@save"):
        i = m.end() - 3
        s = s[:i] + "// bench edit\n" + s[i:]
        break
open(p, "w").write(s)
PY
t0=$(now); "${check[@]}" --chapters "$chapter" | grep -E '^chapter '; t1=$(now)
echo "re-check of $chapter after an edit: $(secs $t0 $t1) s (budget 20 s + run time)"
