"""Where the PyTorch twin's packed update (chapter 14) spends its time: wall clock against the
ATen ops' own CPU time (torch.profiler self time: kernels and their C++ dispatch, not Python).

Run after `scripts/bench-model.sh` has written its data folder, in the environment it sets:

    eval "$(cargo run -q -p checker -- --print-env)"
    ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 OMP_NUM_THREADS=1 \
    PYTHONPATH="$(dirname "$LIBTORCH")" python3 scripts/profile-packed-twin.py target/bench-model/data
"""
import importlib.util
import os
import statistics
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

spec = importlib.util.spec_from_file_location(
    "bench_model", os.path.join(os.path.dirname(__file__), "bench-model.py"))
bench_model = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_model)

torch.set_num_threads(1)
update = bench_model.make_op(sys.argv[1], "packed:book:256", {})
for _ in range(3):  # warm-up
    update()
walls = []
for _ in range(7):
    start = time.perf_counter()
    update()
    walls.append(time.perf_counter() - start)
with profile(activities=[ProfilerActivity.CPU]) as prof:
    update()
events = prof.key_averages()
ops_ms = sum(e.self_cpu_time_total for e in events) / 1e3
calls = sum(e.count for e in events)
print(f"wall median {statistics.median(walls) * 1e3:.1f} ms; ops' self CPU {ops_ms:.1f} ms "
      f"in {calls} op calls")
print(events.table(sort_by="self_cpu_time_total", row_limit=12))
