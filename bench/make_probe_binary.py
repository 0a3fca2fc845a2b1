"""Generate and build a program with many USDT probe sites, for bench_verify.py.

Writes a catalog of ``notes // sites`` probes (0 to 4 arguments of mixed
types), the header probegen generates from it, and C sources in which every
probe fires at ``sites`` places; compiles them with gcc against the real
<sys/sdt.h>. The catalog describes the binary exactly, so ``probegen
verify`` passes on it. Output goes to a scratch directory.

    python bench/make_probe_binary.py [--dir DIR] [--notes N] [--sites S]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# (catalog type, C expression of the parameters n, m, s and the probe's
# number i). Registers mostly, as in real code; the constants that differ
# by probe make about a third of the argument strings unique, as in the
# JDK's libjvm.so (128 distinct strings in 531 notes).
TYPES = [
    ("int", "(int)n"),
    ("uint64_t", "(uint64_t)n + {i}"),
    ("const char *", "s"),
    ("uint16_t", "(uint16_t)m"),
    ("void *", "(void *)(s + {i})"),
    ("int8_t", "(int8_t)m"),
    ("uint32_t", "{i}u"),
]
PROBES_PER_FILE = 500


def _probe_args(i: int) -> list[tuple[str, str]]:
    return [TYPES[(i + j) % len(TYPES)] for j in range(i % 5)]


def write_catalog(path: Path, probes: int) -> None:
    lines = ["provider: bench", "header:", "  enable_macro: BENCH_USDT", "probes:"]
    for i in range(probes):
        lines += [f"  - name: probe_{i}", f"    group: g{i % 20}", f"    doc: Synthetic probe {i}."]
        args = _probe_args(i)
        if args:
            lines.append("    args:")
            lines += [f"      - {{name: a{j}, type: {ctype}}}" for j, (ctype, _) in enumerate(args)]
    path.write_text("\n".join(lines) + "\n")


def write_unit(path: Path, first: int, last: int, sites: int) -> None:
    lines = ['#include <stdint.h>', '#include "bench_probes.h"', "extern volatile int bench_mode;", ""]
    for i in range(first, last):
        call = ", ".join(expr.format(i=i) for _, expr in _probe_args(i))
        lines.append(f"void fire_{i}(long n, long m, const char *s);")
        lines.append(f"void fire_{i}(long n, long m, const char *s) {{")
        lines.append("\t(void)n; (void)m; (void)s;")
        # Each expansion is one note: the branches keep them apart.
        for site in range(sites):
            lines.append(f"\tif (bench_mode == {site}) PROBE_PROBE_{i}({call});")
        lines.append("}")
    path.write_text("\n".join(lines) + "\n")


def build(directory: Path, notes: int, sites: int = 2) -> tuple[Path, Path]:
    """Catalog and binary with ``notes`` probe sites (rounded down to a
    multiple of ``sites``). Returns (catalog, binary); reuses a build
    already in ``directory``."""
    probes = notes // sites
    directory.mkdir(parents=True, exist_ok=True)
    catalog = directory / "bench.yaml"
    binary = directory / "bench_probes"
    if binary.exists() and catalog.exists():
        return catalog, binary
    write_catalog(catalog, probes)
    subprocess.run([sys.executable, "-m", "probegen", "header", "-c", str(catalog),
                    "-o", str(directory / "bench_probes.h")], check=True, cwd=Path(__file__).resolve().parent.parent)
    units = []
    for number, first in enumerate(range(0, probes, PROBES_PER_FILE)):
        unit = directory / f"unit{number}.c"
        write_unit(unit, first, min(first + PROBES_PER_FILE, probes), sites)
        units.append(unit)
    (directory / "main.c").write_text("volatile int bench_mode;\nint main(void) { return bench_mode; }\n")

    def compile_unit(unit: Path) -> Path:
        obj = unit.with_suffix(".o")
        subprocess.run(["gcc", "-O1", "-c", "-DBENCH_USDT", f"-I{directory}", str(unit), "-o", str(obj)], check=True)
        return obj

    with ThreadPoolExecutor() as pool:
        objects = list(pool.map(compile_unit, units))
    subprocess.run(["gcc", "-o", str(binary), str(directory / "main.c"), *map(str, objects)], check=True)
    return catalog, binary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--notes", type=int, default=20_000)
    parser.add_argument("--sites", type=int, default=2)
    args = parser.parse_args()
    directory = args.dir or Path(tempfile.mkdtemp(prefix="probegen-notes-"))
    catalog, binary = build(directory, args.notes, args.sites)
    print(f"{catalog}\n{binary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
