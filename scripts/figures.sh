#!/usr/bin/env bash
# Regenerate the book's figures, book/src/figures/*.svg, from the book's own code: the
# programs in scripts/figures/ call the agentrl crate. Commit the SVGs they write.
#
#   scripts/figures.sh [ONLY]     (ONLY: only the figures whose file name contains it)
#
# Uses libtorch as the checker finds (or installs) it, and the checker's determinism
# settings, so an unchanged figure is rewritten byte for byte.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if ! cargo run --quiet -p tangle -- --check >/dev/null; then
  echo "figures: agentrl/ is stale; run \`cargo run -p tangle\` first" >&2
  exit 1
fi
eval "$(cargo run --quiet -p checker -- --print-env)"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 ONEDNN_MAX_CPU_ISA=AVX2
cargo run --quiet --manifest-path scripts/figures/Cargo.toml --target-dir target/figures -- book/src/figures "$@"
