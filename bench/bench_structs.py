"""Benchmark: `probegen structs` against `pahole -C` on a large binary.

Both are timed as whole processes in the same run, in turns (bench/timing.py),
for the same types; prints wall and CPU seconds and the ratios to pahole.
probegen keeps no cache: every run is cold (drgn reads the DWARF). A row
for drgn alone (a Python process importing drgn and printing the types)
shows what is left once probegen's own work is taken away.

Target (issue 22): at most 1x pahole. On SPDK v25.09's spdk_tgt (5.6 MB of
.debug_info), three nvmf types, best of 25 rounds: probegen 0.058 s wall,
0.74x pahole -C (CPU 0.86x); drgn alone 0.49x; before issue 22's work
1.42x (CPU 1.57x). On the SPDK-shaped program: 0.63x (CPU 0.76x).

    python bench/bench_structs.py [--shape spdk|big] [--rounds N] [BINARY]

--shape spdk (default) builds bench/make_spdk_shaped_binary.py's program:
300 units each repeating the same big headers, as spdk_tgt's DWARF is,
and asks for the three nvmf types measured on spdk_tgt. --shape big is the
older synthetic program (bench/make_big_binary.py). With BINARY, name the
types with --type (repeatable).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_big_binary  # noqa: E402
import make_spdk_shaped_binary  # noqa: E402
from timing import PYTHON, REPO, Command, compile_probegen, race  # noqa: E402

SHAPES = {
    # The types measured on spdk_tgt; pahole finds them in the middle units.
    "spdk": (make_spdk_shaped_binary, "probegen-bench-spdk", "spdk_shaped",
             ["spdk_nvmf_subsystem", "spdk_nvmf_qpair", "spdk_nvmf_ctrlr"]),
    # Header types (in every unit) and unit-local ones from the first,
    # middle and last compilation units.
    "big": (make_big_binary, "probegen-bench", "bigprog",
            ["big_struct_5", "big_struct_390", "unit0_struct_1", "unit150_struct_3", "unit299_struct_24"]),
}


# The floor under probegen: drgn's own look-up of the same types, printed as C.
DRGN_ALONE = """import sys, drgn
prog = drgn.Program()
prog.extra_module(sys.argv[1], 0, create=True).try_file(sys.argv[1], force=True)
for name in sys.argv[2:]:
    str(prog.type("struct " + name))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary", nargs="?", type=Path)
    parser.add_argument("--shape", choices=SHAPES, default="spdk")
    parser.add_argument("--type", dest="types", action="append", default=[])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    maker, scratch, program, types = SHAPES[args.shape]
    if args.binary is not None:
        binary = args.binary
        types = args.types or types
    else:
        binary = Path(tempfile.gettempdir()) / scratch / program
        if not binary.exists():
            if maker is make_big_binary:
                maker.build(binary.parent, 300, 5)
            else:
                maker.build(binary.parent)
    print(f"{binary}: {make_big_binary.debug_info_size(binary) / 1e6:.1f} MB of .debug_info; "
          f"types: {', '.join(types)}")
    compile_probegen()
    probegen = [PYTHON, "-m", "probegen", "structs", str(binary)]
    for name in types:
        probegen += ["-t", name]

    pahole = Command("pahole -C", ["pahole", "-C", ",".join(types), str(binary)])
    commands = [pahole, Command("probegen structs", probegen, dict(os.environ, PYTHONPATH=str(REPO))),
                Command("drgn alone: python, import, index", [PYTHON, "-c", DRGN_ALONE, str(binary), *types])]
    race(commands, args.rounds, warmup=1)
    print(f"best of {args.rounds} rounds, run in turns")
    print(f"{'':38} {'wall s':>7} {'ratio':>6} {'cpu s':>7} {'ratio':>6}")
    for command in commands:
        wall, cpu = command.best_ms / 1000, command.best_cpu_ms / 1000
        print(f"{command.label:38} {wall:7.3f} {wall / (pahole.best_ms / 1000):5.2f}x "
              f"{cpu:7.3f} {cpu / (pahole.best_cpu_ms / 1000):5.2f}x")
    print("target: <= 1x pahole")
    return 0


if __name__ == "__main__":
    sys.exit(main())
