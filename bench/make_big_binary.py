"""Generate and build a large C program for bench_structs.py.

Writes a few hundred C files full of structs, unions, enums and functions,
all including one big shared header (as SPDK's units include its headers),
and links them with -g into one program with well over 20 MB of
.debug_info. Output goes to a scratch directory, never into the repository.

    python bench/make_big_binary.py [--dir DIR] [--files N] [--dwarf 4|5]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SCALARS = ["int", "unsigned int", "long", "uint64_t", "uint32_t", "uint16_t", "uint8_t", "char", "bool", "double"]


def _members(rng: random.Random, known: list[str], enums: list[str], count: int) -> list[str]:
    lines = []
    for i in range(count):
        pick = rng.random()
        if pick < 0.45:
            lines.append(f"\t{rng.choice(SCALARS)} m{i};")
        elif pick < 0.55 and enums:
            lines.append(f"\tenum {rng.choice(enums)} e{i};")
        elif pick < 0.65:
            lines.append(f"\tchar name{i}[{rng.choice([16, 32, 64, 224, 256])}];")
        elif pick < 0.75 and known:
            lines.append(f"\tstruct {rng.choice(known)} *p{i};")
        elif pick < 0.82 and known:
            lines.append(f"\tstruct {rng.choice(known)} v{i};")
        elif pick < 0.9:
            lines.append(f"\tunsigned int b{i} : {rng.randint(1, 12)};")
        else:
            lines.append(f"\tvoid (*cb{i})(void *ctx, int rc);")
    return lines


def write_sources(out: Path, files: int, seed: int = 1) -> list[Path]:
    rng = random.Random(seed)
    header = ["#pragma once", "#include <stdint.h>", "#include <stdbool.h>", "#include <stddef.h>"]
    enums = []
    for e in range(40):
        name = f"big_state_{e}"
        enums.append(name)
        values = ",\n".join(f"\tBIG_STATE_{e}_V{v} = {v * rng.randint(1, 3)}" for v in range(rng.randint(3, 30)))
        header.append(f"enum {name} {{\n{values}\n}};")
    known: list[str] = []
    for s in range(400):
        name = f"big_struct_{s}"
        header.append(f"struct {name};")
        body = _members(rng, known, enums, rng.randint(6, 30))
        header.append(f"struct {name} {{\n" + "\n".join(body) + "\n};")
        known.append(name)
    (out / "common.h").write_text("\n".join(header) + "\n")
    sources = []
    for f in range(files):
        lines = ['#include "common.h"']
        local: list[str] = []
        for s in range(25):
            name = f"unit{f}_struct_{s}"
            body = _members(rng, known[-50:] + local, enums, rng.randint(4, 20))
            lines.append(f"struct {name} {{\n" + "\n".join(body) + "\n};")
            local.append(name)
        for fn in range(20):
            t = rng.choice(local)
            lines.append(
                f"int unit{f}_fn{fn}(struct {t} *x, struct {rng.choice(known)} *y)\n"
                f"{{\n\tstruct {t} copy = *x;\n\t(void)y;\n\treturn (int)sizeof(copy) + {fn};\n}}"
            )
        lines.append(f"int unit{f}_entry(void) {{ return unit{f}_fn0(0, 0); }}")
        path = out / f"unit{f}.c"
        path.write_text("\n".join(lines) + "\n")
        sources.append(path)
    calls = "\n".join(f"\tif (argc > 99) total += unit{f}_entry();" for f in range(files))
    decls = "\n".join(f"int unit{f}_entry(void);" for f in range(files))
    (out / "main.c").write_text(f"{decls}\nint main(int argc, char **argv)\n{{\n\tint total = 0;\n\t(void)argv;\n{calls}\n\treturn total;\n}}\n")
    sources.append(out / "main.c")
    return sources


def build(out: Path, files: int, dwarf: int) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    sources = write_sources(out, files)
    flags = ["-g", f"-gdwarf-{dwarf}", "-O0", "-fno-eliminate-unused-debug-types", "-w"]

    def compile_one(src: Path) -> Path:
        obj = src.with_suffix(".o")
        subprocess.run(["gcc", *flags, "-c", "-o", str(obj), str(src)], check=True)
        return obj

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        objects = list(pool.map(compile_one, sources))
    binary = out / "bigprog"
    subprocess.run(["gcc", "-g", "-o", str(binary), *map(str, objects)], check=True)
    return binary


def debug_info_size(binary: Path) -> int:
    from elftools.elf.elffile import ELFFile

    with open(binary, "rb") as f:
        section = ELFFile(f).get_section_by_name(".debug_info")
        return section.data_size if section is not None else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "probegen-bench")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--dwarf", type=int, choices=(4, 5), default=5)
    args = parser.parse_args()
    binary = build(args.dir, args.files, args.dwarf)
    print(f"{binary}: {debug_info_size(binary) / 1e6:.1f} MB of .debug_info", file=sys.stderr)
    print(binary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
