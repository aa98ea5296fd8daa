#!/usr/bin/env bash
# Run an example of `agentrl` used as a library (examples/examples/NAME.rs): train an agent
# with the book's recipe, or evaluate a saved one.
#
#   scripts/example.sh NAME [-- ARGS]      e.g. scripts/example.sh train -- --steps 20
#
# Builds with the chapter programs' profile (dependencies at opt-level 2) in their target
# dir, target/checker/target, so it reuses the checker's build of tch; against libtorch as
# the checker finds (or installs) it, with the checker's determinism settings, so a run
# prints the same numbers on the same machine every time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
names=$(ls examples/examples | sed -n 's/\.rs$//p' | tr '\n' ' ')
if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  echo "usage: scripts/example.sh NAME [-- ARGS]; examples: $names" >&2
  [ $# -ge 1 ] && exit 0 || exit 2
fi
name=$1
shift
[ "${1:-}" = -- ] && shift
if [ ! -f "examples/examples/$name.rs" ]; then
  echo "example: no example \`$name\` (examples/examples/$name.rs); examples: $names" >&2
  exit 2
fi
checker_env=$(cargo run --quiet -p checker -- --print-env) || exit $?  # its error is on stderr
eval "$checker_env"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 ONEDNN_MAX_CPU_ISA=AVX2
# glibc malloc as chapter programs run (checker's ALLOCATOR_ENV): speed only, not output
export MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=268435456
cargo build --quiet --manifest-path examples/Cargo.toml --target-dir target/checker/target --example "$name"
exec target/checker/target/debug/examples/"$name" "$@"
