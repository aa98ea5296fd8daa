#!/usr/bin/env bash
# TinyAgent (the book's Rust code) against a PyTorch twin on the same weights and the same
# libtorch 2.13.0 (the Python torch the libtorch install provides): forward,
# forward+backward+Adam, lockstep rollouts with and without the KV cache, one cached decode
# step per batch size, chapter 09's rl_update padded and in micro-batches and chapter 14's
# packed_update on the same episodes, attention alone on the packed rows (one dense masked
# call against one causal call per episode, and what that would make of packed_update), the
# fixed cost of a call (B = 1, T = 4, where kernels take almost no time), and the train step's parts
# (forward+loss, backward, Adam step; the twin's Adam also with fused=True). Rust and
# Python run as two server processes, started afresh each round and interleaved op by op,
# several rounds, medians, at 1 and 2 threads; logits, rollouts and one update are checked
# equal first; then the peak memory of chapter 14's checkpointed_log_probs against the full
# logits (--only memory for that part alone). A benchmark, not a test: run it on an idle machine.
#
#   scripts/bench-model.sh [--rounds N] [--threads 1,2] [--quick] [--patience S] [--only OP,OP]
#                          [--min-reps N] [--steady]
#   e.g. --only train:book:8:96,roll_cached:book:8:short,roll_uncached:book:8:short
#
# ATen's ISA and MKL's path are pinned as the checker pins them (DESIGN.md, Determinism),
# so it measures the kernels the book's chapters run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if ! cargo run --quiet -p tangle -- --check --skip-labs >/dev/null 2>&1; then
  echo "bench-model: warning: agentrl/ differs from a fresh tangle of book/src; timing agentrl/ as it is" >&2
fi
checker_env=$(cargo run --quiet -p checker -- --print-env) || exit $?  # its error is on stderr
eval "$checker_env"
export ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 ONEDNN_MAX_CPU_ISA=AVX2
# glibc malloc as the checker runs chapter programs (its ALLOCATOR_ENV), for both servers
export MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=268435456
# the torch Python package is the folder the libtorch install put it in (pip --target)
export PYTHONPATH="$(dirname "$LIBTORCH")${PYTHONPATH:+:$PYTHONPATH}"
case " $* " in
  *" -h "* | *" --help "*) exec python3 scripts/bench-model.py drive DATA RUST_BIN --help ;;
esac
python3 scripts/bench-model.py args "$@" # a bad option stops here, before the build
cargo build --quiet --release --manifest-path scripts/bench-model/Cargo.toml --target-dir target/bench-model
bin=target/bench-model/release/agentrl-bench-model
data=target/bench-model/data
OMP_NUM_THREADS=1 "$bin" setup "$data"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%Y-%m-%d)"
python3 scripts/bench-model.py drive "$data" "$bin" "$@"
# chapter 14: peak memory of one backward through the head, all logits against chunks
# (each in a fresh process; the Rust side only: it is the book's own function being measured)
only=$(python3 scripts/bench-model.py only "$@")
if [ -z "$only" ] || [[ "$only" == *memory* ]]; then
  echo
  echo "peak resident memory of one policy-gradient backward through the head on the update batch:"
  for way in "full 0" "chunked 4096" "chunked 1024" "chunked 256"; do
    # every allocation of 64 KiB or more mapped and unmapped on its own, so the resident peak
    # follows the live tensors (glibc's usual arenas kept freed pages: 110-140 MiB for one run)
    MALLOC_MMAP_THRESHOLD_=65536 MALLOC_TRIM_THRESHOLD_=0 OMP_NUM_THREADS=1 "$bin" memory $way
  done
fi
