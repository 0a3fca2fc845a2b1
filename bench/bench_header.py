#!/usr/bin/env python3
"""Benchmarks of the foundation (run by hand: .venv/bin/python bench/bench_header.py).

1. `probegen header` on a 2,000-probe synthetic catalog against SystemTap's
   `dtrace -h -s` on the equivalent .d file (target: ratio <= 0.3).
2. `probegen header` on the default catalog against `python -c pass`
   (target: <= 2.5x).
3. Instructions per loop iteration of a probe site with no tracer attached,
   from valgrind's callgrind (target: generated == raw; the semaphore-guarded
   ticks probe costs less than SPDK's always-read one).

Whole processes, best of N wall-clock runs, each pair measured in the same run.
"cold" disables the stamp cache (YAML is loaded and jinja2 renders);
"unchanged catalog" is what a build sees when the catalog was touched but
not changed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
PROBEGEN = [PYTHON, "-m", "probegen"]
TYPES = ["int", "uint64_t", "const char *", "uint16_t", "void *", "int8_t"]


COLD = {**os.environ, "PROBEGEN_NO_CACHE": "1"}  # no stamp cache: full load and render


def best_of(command: list[str], runs: int, env=None) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return min(times)


def synthetic(directory: Path, count: int) -> tuple[Path, Path]:
    """The same probes as a probegen catalog and as a DTrace .d provider."""
    yaml_lines = ["provider: synth", "header:", "  enable_macro: SYNTH_USDT", "probes:"]
    d_lines = ["provider synth {"]
    for i in range(count):
        args = [(f"a{j}", TYPES[(i + j) % len(TYPES)]) for j in range(i % 5)]
        yaml_lines += [f"  - name: probe_{i}", "    group: g", f"    doc: Synthetic probe {i}."]
        if args:
            yaml_lines.append("    args:")
            yaml_lines += [f"      - {{name: {n}, type: {t}}}" for n, t in args]
        d_types = ", ".join(t.replace("const char *", "char *") for _, t in args)
        d_lines.append(f"  probe probe_{i}({d_types});")
    d_lines.append("};")
    catalog = directory / "synth.yaml"
    catalog.write_text("\n".join(yaml_lines) + "\n")
    d_file = directory / "synth.d"
    d_file.write_text("\n".join(d_lines) + "\n")
    return catalog, d_file


def bench_large(tmp: Path) -> None:
    dtrace = shutil.which("dtrace")
    if dtrace is None:
        print("1. skipped: SystemTap's dtrace not found (apt-get install systemtap-sdt-dev)")
        return
    catalog, d_file = synthetic(tmp, 2000)
    command = PROBEGEN + ["header", "--catalog", str(catalog), "-o", str(tmp / "ours.h")]
    cold = best_of(command, 5, env=COLD)
    warm = best_of(command, 5)
    theirs = best_of([dtrace, "-h", "-s", str(d_file), "-o", str(tmp / "theirs.h")], 5)
    print(f"1. 2,000-probe header: dtrace -h {theirs * 1000:.0f} ms; probegen cold {cold * 1000:.0f} ms "
          f"(ratio {cold / theirs:.2f}), unchanged catalog {warm * 1000:.0f} ms (ratio {warm / theirs:.2f}); "
          "target <= 0.3")


def bench_default(tmp: Path) -> None:
    output = tmp / "usdt.h"
    command = PROBEGEN + ["header", "--catalog", str(REPO / "probes.yaml"), "-o", str(output)]
    baseline = best_of([PYTHON, "-c", "pass"], 20)
    cold = best_of(command, 20, env=COLD)
    warm = best_of(command, 20)
    print(f"2. default catalog header: python -c pass {baseline * 1000:.1f} ms; probegen cold "
          f"{cold * 1000:.1f} ms ({cold / baseline:.2f}x), unchanged catalog {warm * 1000:.1f} ms "
          f"({warm / baseline:.2f}x); target <= 2.5x")


LOOP = r"""
#include "pgbench_probes.h"
uint64_t spdk_get_ticks(void);
__attribute__((noinline)) uint64_t spdk_get_ticks(void) { uint64_t t; __asm__ volatile("" : "=r"(t) : "0"(42)); return t; }
int main(int argc, char **argv) {
	volatile uint64_t sink = 0;
	uint64_t i;
	(void)argv;
	for (i = 0; i < 1000000; i++) {
		sink += i;
		VARIANT;
	}
	return (int)(sink & 1) + argc - 1;
}
"""

VARIANTS = {
    "no probe": "(void)0",
    "raw DTRACE_PROBE2": "DTRACE_PROBE2(pgbench, raw, i, argc)",
    "generated SPDK_DTRACE_PROBE2": "PGBENCH_DTRACE_PROBE2(work, i, argc)",
    "SPDK-style SPDK_DTRACE_PROBE2_TICKS": "PGBENCH_DTRACE_PROBE2_TICKS(work_ticks, i, argc)",
    "generated typed _TICKS (semaphore)": "PGBENCH_WORK_TICKS(i, argc)",
}

BENCH_CATALOG = """\
provider: pgbench
arg0: true
header:
  enable_macro: PGBENCH_USDT
  typed_prefix: PGBENCH
  compat_prefix: PGBENCH_DTRACE_PROBE
  clock: spdk_get_ticks()
probes:
  # Only for its semaphore: the raw variant calls sdt.h's DTRACE_PROBE2 itself.
  - {name: raw, group: g, doc: raw sdt.h probe, args: [{name: a, type: uint64_t}, {name: b, type: int}]}
  - {name: work, group: g, doc: untyped, args: [{name: a, type: uint64_t}, {name: b, type: int}]}
  - {name: work_ticks, group: g, ticks: true, doc: ticks, args: [{name: a, type: uint64_t}, {name: b, type: int}]}
"""


def bench_probe_cost(tmp: Path) -> None:
    if shutil.which("valgrind") is None:
        print("3. skipped: valgrind not found (apt-get install valgrind)")
        return
    (tmp / "bench.yaml").write_text(BENCH_CATALOG)
    subprocess.run(PROBEGEN + ["header", "--catalog", str(tmp / "bench.yaml"), "-o", str(tmp / "pgbench_probes.h")],
                   check=True)
    print("3. instructions per loop iteration, no tracer attached (callgrind, -O2):")
    counts = {}
    for label, statement in VARIANTS.items():
        source = tmp / "loop.c"
        source.write_text(LOOP.replace("VARIANT", statement))
        binary = tmp / "loop"
        subprocess.run(["gcc", "-O2", "-DPGBENCH_USDT", f"-I{tmp}", str(source), "-o", str(binary)], check=True)
        out = tmp / "callgrind.out"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(binary)],
                       check=True, capture_output=True)
        total = int(re.search(r"^summary: (\d+)", out.read_text(), re.M).group(1))
        counts[label] = total
    base = counts["no probe"]
    for label, total in counts.items():
        print(f"   {label:40} {total / 1e6:8.3f}  (+{(total - base) / 1e6:.3f} over no probe)")
    same = counts["raw DTRACE_PROBE2"] == counts["generated SPDK_DTRACE_PROBE2"]
    cheaper = counts["generated typed _TICKS (semaphore)"] < counts["SPDK-style SPDK_DTRACE_PROBE2_TICKS"]
    print(f"   generated == raw: {same}; semaphore-guarded ticks cheaper than always-read: {cheaper}")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="probegen-bench-") as tmp:
        tmp = Path(tmp)
        bench_large(tmp)
        bench_default(tmp)
        bench_probe_cost(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
