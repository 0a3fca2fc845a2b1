"""Benchmark: `probegen structs` against `pahole -C` on a large binary.

Both are timed as whole processes in the same run, for the same five
types; prints the ratios, cold (no type index cache) and warm (the index
cached by build id, as JSON, in a private temporary cache directory).
Target: at most 5x pahole.

    python bench/bench_structs.py [BINARY]   (default: builds one with make_big_binary.py)
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Spread over the binary: header types (in every unit) and unit-local ones
# from the first, middle and last compilation units.
TYPES = ["big_struct_5", "big_struct_390", "unit0_struct_1", "unit150_struct_3", "unit299_struct_24"]
RUNS = 3


def timed(argv, env=None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def main() -> int:
    sys.path.insert(0, str(HERE))
    import make_big_binary

    if len(sys.argv) > 1:
        binary = Path(sys.argv[1])
    else:
        binary = Path(tempfile.gettempdir()) / "probegen-bench" / "bigprog"
        if not binary.exists():
            make_big_binary.build(binary.parent, 300, 5)
    print(f"{binary}: {make_big_binary.debug_info_size(binary) / 1e6:.1f} MB of .debug_info")
    probegen = [sys.executable, "-m", "probegen", "structs", str(binary)]
    for name in TYPES:
        probegen += ["-t", name]
    pahole = ["pahole", "-C", ",".join(TYPES), str(binary)]

    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, XDG_CACHE_HOME=cache)
        pahole_times, cold, warm = [], [], []
        for _ in range(RUNS):
            pahole_times.append(timed(pahole))
            shutil.rmtree(Path(cache, "probegen"), ignore_errors=True)
            cold.append(timed(probegen, env))
            warm.append(timed(probegen, env))
    reference = statistics.median(pahole_times)
    print(f"pahole -C       {reference:7.2f} s  (median of {RUNS})")
    for label, times in (("probegen cold", cold), ("probegen warm", warm)):
        t = statistics.median(times)
        print(f"{label:15} {t:7.2f} s  ratio {t / reference:5.2f}x pahole (target <= 5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
