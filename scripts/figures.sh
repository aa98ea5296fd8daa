#!/usr/bin/env bash
# Regenerate the book's figures, book/src/figures/*.svg, from the book's own code: the
# programs in scripts/figures/ call the agentrl crate. Commit the SVGs they write.
#
#   scripts/figures.sh [NAME...]     (NAME: part of a figure's file name; default: all)
#
# Uses libtorch as the checker finds (or installs) it, and the checker's determinism
# settings, so an unchanged figure is rewritten byte for byte.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# A stale agentrl/ would draw figures from code the book does not hold. Stale lab results do
# not stop it (--skip-labs): `tangle --check` (CI) fails on them anyway, and a figure read
# from a results file is redrawn after `scripts/lab.sh NAME` reruns it.
if ! cargo run --quiet -p tangle -- --check --skip-labs >/dev/null; then
  echo "figures: \`tangle --check\` failed (above): re-tangle a stale agentrl/ with \`cargo run -p tangle\`, or fix the book" >&2
  exit 1
fi
checker_env=$(cargo run --quiet -p checker -- --print-env) || exit $?  # its error is on stderr
eval "$checker_env"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 ONEDNN_MAX_CPU_ISA=AVX2
# glibc malloc as chapter programs run (checker's ALLOCATOR_ENV): speed only, not output
export MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=268435456
cargo run --quiet --manifest-path scripts/figures/Cargo.toml --target-dir target/figures -- book/src/figures "$@"
