#!/usr/bin/env bash
# Measure the book's budgets (DESIGN.md, "Budgets") on this machine:
#   cold      full book check with an empty chapter build dir (target/checker removed; every
#             dependency of the chapter programs, tch included, compiled again; libtorch as
#             installed: on a fresh machine its install comes on top, see docs/performance.md)
#   no-op     full book check with nothing changed, started as the README starts it
#             (`cargo run -q -p checker`): budget 2 s
#   prose     one chapter re-checked after a prose edit (a paragraph added), then restored:
#             budget 3 s
#   warm      full book check with --force --jobs 2 (every chapter built and run, nothing
#             compiled but the chapters and their prefix libraries)
#   run       each chapter's build and run time in that warm check, as the checker reports
#             them, against the 30 s budget for one chapter's program; the slowest three
# Usage: scripts/bench-book.sh [--skip-cold] [--busy N] [CHAPTER-FOR-PROSE-EDIT]
# --skip-cold brings the cache up to date first (untimed), so "no-op" is one.
# --busy N keeps N CPU-bound processes running beside the warm check (a slower machine).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '2,17s/^# \{0,1\}//p' "$0"; }
skip_cold=0
busy=0
chapter=02
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --skip-cold) skip_cold=1 ;;
    --busy) shift; busy=${1:?--busy needs a count} ;;
    -*) echo "bench-book: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) chapter=$1 ;;
  esac
  shift
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
  echo "cold full check (libtorch installed): $(secs $t0 $t1) s"
else
  t0=$(now); timed_check target/bench-update.log --chapters all; t1=$(now)
  echo "(cache brought up to date first, untimed in the budgets: $(secs $t0 $t1) s)"
fi
t0=$(now); cargo run -q -p checker -- --chapters all > target/bench-noop.log 2>&1; t1=$(now)
echo "no-op full check (cargo run): $(secs $t0 $t1) s (budget 2 s)"

file=$(ls book/src/"$chapter"-*.md)
cp "$file" target/bench-chapter.bak
trap 'cp target/bench-chapter.bak "$file"' EXIT
# A paragraph after the title: every block's lines move, no block changes.
python3 - "$file" <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
i = s.index("\n") + 1
open(p, "w").write(s[:i] + "\nA paragraph added by bench-book,\nover two lines.\n" + s[i:])
PY
t0=$(now); "${check[@]}" --chapters "$chapter" | grep -E '^chapter '; t1=$(now)
echo "re-check of $chapter after a prose edit: $(secs $t0 $t1) s (budget 3 s)"
cp target/bench-chapter.bak "$file"

hogs=()
stop_hogs() { [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null || true; }
trap 'stop_hogs; cp target/bench-chapter.bak "$file"' EXIT
for _ in $(seq 1 "$busy"); do
  python3 -c 'while True: pass' &
  hogs+=($!)
done
log=target/bench-warm.log
t0=$(now); timed_check "$log" --chapters all --force --jobs 2 --timings; t1=$(now)
stop_hogs
echo "warm --force --jobs 2, $busy CPU-bound process(es) beside it: $(secs $t0 $t1) s"
echo "run times in it (budget 30 s per chapter's program, --jobs 2):"
python3 - "$log" <<'PY'
import re, sys
rows = []
for line in open(sys.argv[1]):
    m = re.match(r"chapter (\w+) .*\(build ([\d.]+) s, run ([\d.]+) s\)", line)
    if m:
        rows.append((m.group(1), float(m.group(2)), float(m.group(3))))
for ch, build, run in rows:
    flag = "  OVER BUDGET" if run > 30 else ""
    print(f"  chapter {ch:>2}  build {build:5.1f} s  run {run:5.1f} s{flag}")
print(f"  all chapters' programs: {sum(r for _, _, r in rows):.1f} s; builds {sum(b for _, b, _ in rows):.1f} s")
slow = sorted(rows, key=lambda r: -r[2])[:3]
print("  slowest three: " + ", ".join(f"{ch} {run:.1f} s" for ch, _, run in slow))
PY
