"""The type index's byte-level reader (probegen.dwarf.scan) on real gcc
multi-unit programs, DWARF 4 and 5: it finds exactly what pyelftools'
own DIEs say is there (the index built from them is the reference), and
on damaged units it stops with one error line, never a traceback or hang.
"""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from probegen.dwarf import DwarfTypes
from probegen.dwarf import filetable
from probegen.dwarf.index import TypeIndex, _section_bytes, pyelftools_file_names

UNITS = 205  # the 200th unit alone defines a type
HEADER = """#include <stdint.h>
struct opaque;                      /* defined in unit 150 only */
enum shared_state { SHARED_A, SHARED_B = 5, SHARED_C };
struct shared_link { struct shared_link *next, **prev; };
struct shared_big {
	char nqn[224];
	enum shared_state state;
	struct shared_link link;
	struct { uint32_t lo, hi; } half;
	int (*cb)(struct shared_big *self, void *ctx);
	struct opaque *handle;
	unsigned int flag : 3;
};
typedef struct shared_big shared_big_t;
"""


def _need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")


def _build(out: Path, dwarf: int, units: int = UNITS, flags: tuple[str, ...] = ()) -> Path:
    _need("gcc")
    out.mkdir()
    (out / "shared.h").write_text(HEADER)
    sources = []
    for i in range(units):
        lines = ['#include "shared.h"']
        if i == 149:
            lines.append("struct opaque { long id; char name[32]; };")
            lines.append("long opaque_id(struct opaque *o) { return o->id; }")
        if i == 199:
            lines.append("struct only_in_unit_200 { int a; shared_big_t b; struct only_in_unit_200 *next; };")
            lines.append("int unit200(struct only_in_unit_200 *u) { return u->a; }")
        lines.append(f"struct local_{i} {{ int x{i}; }};")
        # A function with a body (locals, a loop, inlined calls): DIEs the
        # index steps over.
        lines.append(
            f"static inline int twice_{i}(int v) {{ return v * 2; }}\n"
            f"long use_{i}(shared_big_t *s, struct local_{i} *l, long n)\n"
            f"{{\n\tlong total = l->x{i};\n\tfor (long k = 0; k < n; k++)\n"
            f"\t\ttotal += s->nqn[k % 224] + twice_{i}((int)k);\n\treturn total + s->state;\n}}")
        path = out / f"unit{i}.c"
        path.write_text("\n".join(lines) + "\n")
        sources.append(path)
    main = out / "main.c"
    main.write_text("int main(void) { return 0; }\n")
    binary = out / "prog"
    objects = [src.with_suffix(".o") for src in [*sources, main]]
    result = subprocess.run(["gcc", "-g", f"-gdwarf-{dwarf}", "-O2", *flags, "-c", *map(str, sources), str(main)],
                            cwd=out, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    subprocess.run(["gcc", *flags, "-o", str(binary), *map(str, objects)], check=True, cwd=out)
    return binary


@pytest.fixture(scope="module", params=[4, 5], ids=["dwarf4", "dwarf5"])
def program(request, tmp_path_factory):
    return _build(tmp_path_factory.mktemp("scan") / f"d{request.param}", request.param)


@pytest.fixture(autouse=True)
def no_cache(monkeypatch):
    monkeypatch.setenv("PROBEGEN_NO_CACHE", "1")


def _reference_index(dwarfinfo) -> dict[str, list[tuple]]:
    """The index as pyelftools' DIEs give it: every top-level DIE parsed,
    the same fingerprints (C units: no namespaces)."""
    tags = {"DW_TAG_structure_type": "struct", "DW_TAG_union_type": "union",
            "DW_TAG_enumeration_type": "enum", "DW_TAG_typedef": "typedef"}
    names: dict[str, list[tuple]] = {}
    seen = set()
    for cu in dwarfinfo.iter_CUs():
        top = cu.get_top_DIE()
        stmt_list = top.attributes["DW_AT_stmt_list"].value
        files = None
        for die in top.iter_children():
            attrs = die.attributes
            if die.tag not in tags or "DW_AT_name" not in attrs or "DW_AT_declaration" in attrs:
                continue
            size = attrs["DW_AT_byte_size"].value if "DW_AT_byte_size" in attrs else -1
            line = attrs["DW_AT_decl_line"].value if "DW_AT_decl_line" in attrs else 0
            files = files if files is not None else pyelftools_file_names(dwarfinfo, cu, stmt_list)
            where = files.get(attrs["DW_AT_decl_file"].value, "") if "DW_AT_decl_file" in attrs else ""
            name = attrs["DW_AT_name"].value.decode()
            fingerprint = (name, tags[die.tag], size, line, where)
            if fingerprint not in seen:
                seen.add(fingerprint)
                names.setdefault(name, []).append((tags[die.tag], cu.cu_offset, die.offset, size, line))
    return names


def test_index_is_what_pyelftools_reads(program):
    with open(program, "rb") as f:
        dwarfinfo = ELFFile(f).get_dwarf_info(relocate_dwarf_sections=False)
        assert TypeIndex.build(dwarfinfo).names == _reference_index(dwarfinfo)


def test_lto_program_index(tmp_path):
    """gcc -flto: units refer to each other's DIEs (DW_FORM_ref_addr),
    which the reader steps over like any other form."""
    program = _build(tmp_path / "lto", 5, units=30, flags=("-flto",))
    with open(program, "rb") as f:
        dwarfinfo = ELFFile(f).get_dwarf_info(relocate_dwarf_sections=False)
        assert TypeIndex.build(dwarfinfo).names == _reference_index(dwarfinfo)


def test_file_tables_are_what_pyelftools_reads(program):
    with open(program, "rb") as f:
        dwarfinfo = ELFFile(f).get_dwarf_info(relocate_dwarf_sections=False)
        line_bytes = _section_bytes(dwarfinfo.debug_line_sec)
        strings = {".debug_str": _section_bytes(dwarfinfo.debug_str_sec)}
        if dwarfinfo.debug_line_str_sec is not None:
            strings[".debug_line_str"] = _section_bytes(dwarfinfo.debug_line_str_sec)
        with_header = 0
        for cu in dwarfinfo.iter_CUs():
            stmt_list = cu.get_top_DIE().attributes["DW_AT_stmt_list"].value
            fast = filetable.file_names(line_bytes, stmt_list, True, strings)
            assert fast is not None and fast == pyelftools_file_names(dwarfinfo, cu, stmt_list)
            with_header += any(path.rsplit("/", 1)[-1] == "shared.h" for path in fast.values())
        assert with_header == UNITS  # all but main.c's


def test_types_across_units_declarations_and_the_200th_unit(program, capsys):
    from probegen.cli import main

    with DwarfTypes.open(program, use_cache=False) as types:
        index = types.index
        cu_offsets = [cu.cu_offset for cu in types.dwarf.iter_CUs()]
    # One header type repeated in every unit: one entry.
    assert len(index.lookup("shared_big")) == 1 and len(index.lookup("shared_big_t")) == 1
    # Declared everywhere, defined in unit 150 only: that definition.
    [opaque] = index.lookup("opaque")
    assert cu_offsets.index(opaque.cu_offset) == 149 and opaque.size == 40
    [last] = index.lookup("only_in_unit_200")
    assert cu_offsets.index(last.cu_offset) == 199
    assert main(["structs", str(program), "-t", "only_in_unit_200", "-t", "opaque"]) == 0
    text = capsys.readouterr().out
    for line in ("struct only_in_unit_200 {", "struct shared_big {", "char nqn[224];", "struct opaque {"):
        assert line in text, text


# ---- damage ----------------------------------------------------------------


def _debug_info(binary: Path) -> tuple[int, int]:
    with open(binary, "rb") as f:
        section = ELFFile(f).get_section_by_name(".debug_info")
        return section["sh_offset"], section["sh_size"]


def _structs(binary: Path, *names: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "probegen", "structs", str(binary), "--no-cache"]
    for name in names:
        argv += ["-t", name]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def _assert_one_error_line(result, *expected: str):
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert "damaged or truncated" in result.stderr, result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr


def _damaged(program: Path, tmp_path: Path, edit) -> Path:
    data = bytearray(program.read_bytes())
    start, size = _debug_info(program)
    edit(data, start, size)
    out = tmp_path / "damaged"
    out.write_bytes(bytes(data))
    return out


def _top_type_offset(program: Path, name: str) -> int:
    with DwarfTypes.open(program, use_cache=False) as types:
        return types.index.lookup(name)[0].die_offset


def test_bad_abbreviation_code(program, tmp_path):
    offset = _top_type_offset(program, "only_in_unit_200")

    def edit(data, start, size):
        data[start + offset] = 0x7E  # no unit of this program has 126 abbreviations

    _assert_one_error_line(_structs(_damaged(program, tmp_path, edit), "only_in_unit_200"),
                           "abbreviation code 126")


def test_unit_longer_than_the_section(program, tmp_path):
    def edit(data, start, size):
        data[start:start + 4] = struct.pack("<I", size * 2)  # the first unit claims twice the section

    result = _structs(_damaged(program, tmp_path, edit), "shared_big")
    _assert_one_error_line(result)


def test_truncated_units(program, tmp_path):
    """.debug_info cut at many places (the rest zeros, or the section
    shortened): definitions or one error line, each in bounded time."""
    start, size = _debug_info(program)
    for cut in range(size // 4, size, size // 4):
        def zero_tail(data, start, size, cut=cut):
            data[start + cut:start + size] = bytes(size - cut)

        result = _structs(_damaged(program, tmp_path, zero_tail), "only_in_unit_200")
        assert result.returncode in (0, 2), result
        assert "Traceback" not in result.stderr and result.stderr.count("\n") <= 1, result.stderr

        def shorten(data, start, size, cut=cut):
            elf = ELFFile(io.BytesIO(bytes(data)))
            index = [s.name for s in elf.iter_sections()].index(".debug_info")
            header = elf["e_shoff"] + index * elf["e_shentsize"]
            # sh_size of a 64-bit little-endian section header: bytes 32..40
            data[header + 32:header + 40] = struct.pack("<Q", cut)

        result = _structs(_damaged(program, tmp_path, shorten), "only_in_unit_200")
        assert result.returncode in (0, 2), result
        assert "Traceback" not in result.stderr and result.stderr.count("\n") <= 1, result.stderr


def test_sibling_link_pointing_back(program, tmp_path):
    """A top-level DIE whose DW_AT_sibling points at itself: refused, not
    followed for ever."""
    with open(program, "rb") as f:
        dwarfinfo = ELFFile(f).get_dwarf_info(relocate_dwarf_sections=False)
        cus = list(dwarfinfo.iter_CUs())
        cu = cus[199]
        for die in cu.get_top_DIE().iter_children():
            sibling = die.attributes.get("DW_AT_sibling")
            if die.has_children and sibling is not None and sibling.form == "DW_FORM_ref4":
                break
        else:
            pytest.skip("gcc wrote no DW_FORM_ref4 sibling link in unit 200")
        where, back = sibling.offset, die.offset - cu.cu_offset  # the link, and the DIE itself

    def edit(data, start, size):
        data[start + where:start + where + 4] = struct.pack("<I", back)

    _assert_one_error_line(_structs(_damaged(program, tmp_path, edit), "only_in_unit_200"), "DW_AT_sibling")
