#!/usr/bin/env bash
# Run a lab: an experiment longer than a chapter, labs/src/bin/NAME.rs, which writes its
# results and their provenance (this command, the hash of the code it ran) to
# labs/results/NAME.json. Commit that file; chapters read it via $AGENTRL_LABS_DIR.
#
#   scripts/lab.sh NAME [ARGS]
#
# Builds in release mode (target/labs), with libtorch as the checker finds (or installs)
# it and the checker's determinism settings, so rerunning an unchanged lab rewrites the
# same bytes. Refuses to run while agentrl/ is stale (it would hash code the book does not
# hold). `cargo run -p tangle -- --check` reports results whose code has changed since.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  echo "usage: scripts/lab.sh NAME [ARGS]; labs:" $(ls labs/src/bin | sed -n 's/\.rs$//p') >&2
  [ $# -ge 1 ] && exit 0 || exit 2
fi
name=$1
shift
if [ ! -f "labs/src/bin/$name.rs" ]; then
  echo "lab: no lab \`$name\` (labs/src/bin/$name.rs); labs:" $(ls labs/src/bin | sed -n 's/\.rs$//p') >&2
  exit 2
fi
# Stale lab results are what this script fixes; a stale agentrl/ (or a broken book) is not.
if ! cargo run --quiet -p tangle -- --check --skip-labs >/dev/null; then
  echo "lab: \`tangle --check\` failed (above): re-tangle a stale agentrl/ with \`cargo run -p tangle\`, or fix the book" >&2
  exit 1
fi
# The code hash before the build: the lab refuses to write results if the code changes meanwhile.
AGENTRL_LAB_CODE_HASH=$(cargo run --quiet -p tangle -- --lab-hash "$name")
export AGENTRL_LAB_CODE_HASH
checker_env=$(cargo run --quiet -p checker -- --print-env) || exit $?  # its error is on stderr
eval "$checker_env"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 ONEDNN_MAX_CPU_ISA=AVX2
# glibc malloc as chapter programs run (checker's ALLOCATOR_ENV): speed only, not output
export MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=268435456
cargo build --quiet --release --manifest-path labs/Cargo.toml --target-dir target/labs --bin "$name"
exec target/labs/release/"$name" "$@"
