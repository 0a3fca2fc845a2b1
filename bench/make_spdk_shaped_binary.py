"""Generate and build a C program shaped like SPDK's ``spdk_tgt`` for
bench_structs.py.

SPDK's DWARF is not one huge unit: it is ~300 compilation units that each
include the same big headers, so each unit repeats a few hundred of the
same struct, union, enum and typedef definitions (char[224] NQNs, nested
structs, TAILQ links, function pointers, state enums), beside -O2 code
whose DIEs (inlined calls, locations) nobody asks for. This writes that:
a handful of headers with a few thousand types, ``nvmf_like.h`` with the
three measured types (spdk_nvmf_subsystem, spdk_nvmf_qpair,
spdk_nvmf_ctrlr), and N units that each use a different slice of the
headers (the nvmf types in the middle tenth of the units), built with gcc -g -O2. One type, ``only_in_last_unit``, is
defined in the last unit alone. Output goes to a scratch directory.

    python bench/make_spdk_shaped_binary.py [--dir DIR] [--files N] [--dwarf 4|5]
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

HEADERS = 8
TYPES_PER_HEADER = 300  # structs, enums and typedefs per header
USED_PER_UNIT = 8  # header structs each unit's functions take
SCALARS = ["int", "unsigned int", "long", "uint64_t", "uint32_t", "uint16_t", "uint8_t", "char", "bool",
           "double", "size_t"]
TARGETS = ("spdk_nvmf_subsystem", "spdk_nvmf_qpair", "spdk_nvmf_ctrlr")


def _tailq(kind: str, name: str) -> str:
    return f"struct {{ {kind} {name} *tqe_next; {kind} {name} **tqe_prev; }}"


def _members(rng: random.Random, structs: list[str], leaves: list[str], enums: list[str], count: int,
             own: str) -> list[str]:
    """Members of struct ``own``. Most pointers go to opaque handles (as
    SPDK's do), values nest only leaf structs: a unit using a struct then
    carries tens of types, not the whole header."""
    lines = []
    for i in range(count):
        pick = rng.random()
        if pick < 0.40:
            lines.append(f"\t{rng.choice(SCALARS)} m{i};")
        elif pick < 0.50 and enums:
            lines.append(f"\tenum {rng.choice(enums)} state{i};")
        elif pick < 0.57:
            lines.append(f"\tchar nqn{i}[224];")
        elif pick < 0.62:
            lines.append(f"\tstruct {own}_handle{i} *handle{i};")
        elif pick < 0.65 and structs:
            lines.append(f"\tstruct {rng.choice(structs)} *ref{i};")
        elif pick < 0.72 and leaves:
            lines.append(f"\tstruct {rng.choice(leaves)} inner{i};")
        elif pick < 0.78:
            lines.append(f"\t{_tailq('struct', own)} link{i};")
        elif pick < 0.84:
            lines.append(f"\tunion {{ uint64_t raw{i}; struct {{ uint32_t lo, hi; }} half{i}; }} u{i};")
        elif pick < 0.90:
            lines.append(f"\tunsigned int flag{i} : {rng.randint(1, 7)};")
        else:
            lines.append(f"\tint (*cb{i})(struct {own} *self, void *ctx, int rc);")
    return lines


def _header(index: int, rng: random.Random, earlier: list[str]) -> tuple[str, list[str], list[str]]:
    """Text of header ``index``, its struct names and its typedef names."""
    lines = [f"#ifndef SPDK_LIKE_H{index}", f"#define SPDK_LIKE_H{index}",
             "#include <stdint.h>", "#include <stdbool.h>", "#include <stddef.h>"]
    lines += [f'#include "h{i}.h"' for i in range(index)]
    enums, structs, typedefs, leaves = [], [], [], []
    for t in range(TYPES_PER_HEADER):
        pick = t % 10
        if pick == 0:
            name = f"h{index}_state_{t}"
            values = ",\n".join(f"\t{name.upper()}_V{v} = {v * rng.randint(1, 4)}"
                                for v in range(rng.randint(3, 25)))
            lines.append(f"enum {name} {{\n{values}\n}};")
            enums.append(name)
        elif pick == 1 and structs:
            name = f"h{index}_{t}_t"
            lines.append(f"typedef struct {rng.choice(structs)} {name};")
            typedefs.append(name)
        else:
            name = f"h{index}_object_{t}"
            known = earlier[-60:] + structs[-40:]
            body = _members(rng, known, leaves, enums, rng.randint(5, 28), name)
            lines.append(f"struct {name} {{\n" + "\n".join(body) + "\n};")
            structs.append(name)
            if not any(" inner" in b or " *ref" in b for b in body):
                leaves.append(name)
    lines.append("#endif")
    return "\n".join(lines) + "\n", structs, typedefs


_TARGETS_H = """#ifndef NVMF_LIKE_H
#define NVMF_LIKE_H
#include "h{last}.h"
enum spdk_nvmf_subsystem_state {{
	SPDK_NVMF_SUBSYSTEM_INACTIVE = 0, SPDK_NVMF_SUBSYSTEM_ACTIVATING, SPDK_NVMF_SUBSYSTEM_ACTIVE,
	SPDK_NVMF_SUBSYSTEM_PAUSING, SPDK_NVMF_SUBSYSTEM_PAUSED, SPDK_NVMF_SUBSYSTEM_RESUMING,
	SPDK_NVMF_SUBSYSTEM_DEACTIVATING,
}};
enum spdk_nvmf_qpair_state {{
	SPDK_NVMF_QPAIR_UNINITIALIZED = 0, SPDK_NVMF_QPAIR_ACTIVE, SPDK_NVMF_QPAIR_DEACTIVATING, SPDK_NVMF_QPAIR_ERROR,
}};
struct spdk_nvmf_subsystem;
struct spdk_nvmf_ctrlr;
typedef void (*spdk_nvmf_state_change_done)(struct spdk_nvmf_subsystem *subsystem, void *cb_arg, int status);
struct spdk_nvmf_qpair {{
	uint8_t state;
	enum spdk_nvmf_qpair_state qstate;
	void *transport;
	struct spdk_nvmf_ctrlr *ctrlr;
	struct {a} *group;
	uint16_t qid;
	uint16_t sq_head;
	uint16_t sq_head_max;
	struct {{ struct spdk_nvmf_qpair *tqe_next; struct spdk_nvmf_qpair **tqe_prev; }} link;
	bool connect_received;
	bool disconnect_started;
	void (*connect_cb)(struct spdk_nvmf_qpair *qpair, int status);
	struct {b} stats;
}};
struct spdk_nvmf_ctrlr {{
	uint16_t cntlid;
	char hostnqn[224];
	struct spdk_nvmf_subsystem *subsys;
	struct {{ uint32_t cc, csts, aqa; uint64_t asq, acq; }} vcprop;
	struct spdk_nvmf_qpair *admin_qpair;
	struct {c} feat;
	uint8_t hostid[16];
	struct {{ struct spdk_nvmf_ctrlr *tqe_next; struct spdk_nvmf_ctrlr **tqe_prev; }} link;
	unsigned int in_destruct : 1;
	unsigned int dif_insert_or_strip : 1;
}};
struct spdk_nvmf_subsystem {{
	void *thread;
	uint32_t id;
	enum spdk_nvmf_subsystem_state state;
	enum spdk_nvmf_subsystem_state state_change_target;
	char subnqn[224];
	char sn[21];
	char mn[41];
	uint16_t next_cntlid;
	struct {{ uint8_t allow_any_host : 1; uint8_t allow_any_listener : 1; uint8_t ana_reporting : 1; }} flags;
	spdk_nvmf_state_change_done changing_state_cb;
	void *changing_state_cb_arg;
	struct {d} *tgt;
	struct {{ struct spdk_nvmf_ctrlr *tqh_first; struct spdk_nvmf_ctrlr **tqh_last; }} ctrlrs;
	struct {{ struct spdk_nvmf_subsystem *tqe_next; struct spdk_nvmf_subsystem **tqe_prev; }} entries;
	struct {e} ns_opts;
}};
#endif
"""


def write_sources(out: Path, files: int, seed: int = 7) -> list[Path]:
    rng = random.Random(seed)
    all_structs: list[str] = []
    all_typedefs: list[str] = []
    for h in range(HEADERS):
        text, structs, typedefs = _header(h, rng, all_structs)
        (out / f"h{h}.h").write_text(text)
        all_structs += structs
        all_typedefs += typedefs
    picks = {k: rng.choice(all_structs) for k in "abcde"}
    (out / "nvmf_like.h").write_text(_TARGETS_H.format(last=HEADERS - 1, **picks))
    sources = []
    for f in range(files):
        # Each unit uses its own slice of the headers, as SPDK's lib/ files
        # use different parts of spdk/*.h; the units in the middle tenth
        # (SPDK's lib/nvmf, linked after lib/ modules before it) use the
        # nvmf types, so pahole -C, which stops at the first unit that has
        # them all, reads about half of the DWARF, as on spdk_tgt.
        used = rng.sample(all_structs, USED_PER_UNIT)
        typedefs = rng.sample(all_typedefs, 5)
        lines = ['#include "nvmf_like.h"', "#include <string.h>"]
        if f == files - 1:
            lines.append("struct only_in_last_unit { int id; char name[224]; struct only_in_last_unit *next; };")
            lines.append("int touch_last(struct only_in_last_unit *u) { return u->id; }")
        if files * 5 // 10 <= f < files * 6 // 10:
            lines.append(
                f"int unit{f}_nvmf(struct spdk_nvmf_subsystem *s, struct spdk_nvmf_qpair *q, "
                f"struct spdk_nvmf_ctrlr *c)\n{{\n"
                f"\treturn (int)s->id + q->qid + c->cntlid + (int)strlen(s->subnqn);\n}}"
            )
        for i, name in enumerate(used):
            lines.append(
                f"__attribute__((noinline)) long unit{f}_use{i}(struct {name} *x, long n)\n"
                f"{{\n\tlong total = 0;\n\tfor (long k = 0; k < n; k++)\n"
                f"\t\ttotal += ((const unsigned char *)x)[k % sizeof(*x)] * (k + {i});\n"
                f"\treturn total + (long)sizeof(*x);\n}}"
            )
        for i, name in enumerate(typedefs):
            lines.append(f"long unit{f}_td{i}({name} *x) {{ return (long)sizeof(*x); }}")
        calls = " + ".join(f"unit{f}_use{i}(p, n)" for i in range(len(used)))
        lines.append(f"long unit{f}_entry(void *p, long n) {{ return {calls}; }}")
        path = out / f"unit{f}.c"
        path.write_text("\n".join(lines) + "\n")
        sources.append(path)
    calls = "\n".join(f"\tif (argc > 99) total += unit{f}_entry(argv, argc);" for f in range(files))
    decls = "\n".join(f"long unit{f}_entry(void *p, long n);" for f in range(files))
    (out / "main.c").write_text(
        f"{decls}\nint main(int argc, char **argv)\n{{\n\tlong total = 0;\n{calls}\n\treturn (int)total;\n}}\n")
    sources.append(out / "main.c")
    return sources


def build(out: Path, files: int = 300, dwarf: int = 5) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    sources = write_sources(out, files)
    flags = ["-g", f"-gdwarf-{dwarf}", "-O2", "-w"]

    def compile_one(src: Path) -> Path:
        obj = src.with_suffix(".o")
        subprocess.run(["gcc", *flags, "-c", "-o", str(obj), str(src)], check=True)
        return obj

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        objects = list(pool.map(compile_one, sources))
    binary = out / "spdk_shaped"
    subprocess.run(["gcc", "-g", "-o", str(binary), *map(str, objects)], check=True)
    return binary


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from make_big_binary import debug_info_size

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "probegen-bench-spdk")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--dwarf", type=int, choices=(4, 5), default=5)
    args = parser.parse_args()
    binary = build(args.dir, args.files, args.dwarf)
    print(f"{binary}: {debug_info_size(binary) / 1e6:.1f} MB of .debug_info", file=sys.stderr)
    print(binary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
