"""The struct loader's byte-level DIE reader (probegen.dwarf.dies) on real
gcc and g++ programs: every indexed type it loads is, member for member,
what pyelftools' own DIEs give, shared types shared alike. What it
leaves to pyelftools (here a virtual base class's location expression)
comes out the same too.
"""

from __future__ import annotations

import dataclasses
import subprocess

import pytest

from helpers import C_DIR, require
from probegen.dwarf import DwarfTypes, model as m
from probegen.errors import InputError

C_VARIANTS = {
    "dwarf2": ["-gdwarf-2"], "dwarf4": ["-gdwarf-4"], "dwarf5": ["-gdwarf-5"], "dwarf5-gz": ["-gdwarf-5", "-gz"],
    "lto": ["-gdwarf-5", "-O2", "-flto"],
}
VIRTUAL_BASE = """
struct base { long b; virtual ~base() {} };
struct left : virtual base { int l; };
struct right : virtual base { int r; };
struct diamond : left, right { char d[3]; };
diamond instance;
int main() { return instance.d[0]; }
"""


@pytest.fixture(autouse=True)
def no_cache(monkeypatch):
    monkeypatch.setenv("PROBEGEN_NO_CACHE", "1")


def _described(t: m.Type, ids: dict) -> list[str]:
    """Every node reachable from ``t``, fields and links, as text."""
    lines, pending = [], [t]

    def ref(x):
        if id(x) not in ids:
            ids[id(x)] = len(ids)
            pending.append(x)
        return f"#{ids[id(x)]}"

    def field(value):
        if isinstance(value, m.Type):
            return ref(value)
        if isinstance(value, list):
            return [field(v) for v in value]
        if dataclasses.is_dataclass(value):
            return tuple((f.name, field(getattr(value, f.name))) for f in dataclasses.fields(value))
        return value

    ref(t)
    while pending:
        node = pending.pop()
        fields = [(f.name, field(getattr(node, f.name))) for f in dataclasses.fields(node)]
        lines.append(f"{ids[id(node)]} {type(node).__name__} {fields!r}")
    return lines


def _all_types(binary, direct: bool) -> list[str]:
    """Each indexed name's type (or error), read by the DIE reader or
    (not ``direct``) from pyelftools' DIEs."""
    out, ids = [], {}
    with DwarfTypes.open(binary, use_cache=False) as types:
        if not direct:
            types._dies = False  # DwarfTypes' switch to pyelftools' DIEs
        for name in sorted(types.index.names):
            try:
                out += [name, *_described(types.lookup(name), ids)]
            except InputError as exc:
                out += [name, str(exc)]
        return out


@pytest.mark.parametrize("variant", list(C_VARIANTS))
def test_c_types_equal_pyelftools(variant, tmp_path):
    require("gcc")
    binary = tmp_path / "types"
    subprocess.run(["gcc", "-g", *C_VARIANTS[variant], "-DWITH_PROBE", "-o", str(binary),
                    str(C_DIR / "dwarf_types.c")], check=True)
    direct = _all_types(binary, True)
    assert direct == _all_types(binary, False)
    assert len(direct) > 100


def test_cxx_types_equal_pyelftools(tmp_path):
    require("g++")
    binary = tmp_path / "cxx"
    subprocess.run(["g++", "-g", "-o", str(binary), str(C_DIR / "cxx_types.cpp")], check=True)
    direct = _all_types(binary, True)
    assert direct == _all_types(binary, False)


@pytest.mark.parametrize("dwarf", ["-gdwarf-2", "-gdwarf-5"])
def test_virtual_base_equal_pyelftools(dwarf, tmp_path):
    require("g++")
    source = tmp_path / "diamond.cpp"
    source.write_text(VIRTUAL_BASE)
    binary = tmp_path / "diamond"
    subprocess.run(["g++", "-g", dwarf, "-o", str(binary), str(source)], check=True)
    direct = _all_types(binary, True)
    assert direct == _all_types(binary, False)
    assert "diamond" in direct and "_vptr_right" in "\n".join(direct)


def _uleb(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def _names_as_strp_sup(binary, patched) -> int:
    """A copy of ``binary`` whose members' DW_AT_name attributes in
    DW_FORM_strp say DW_FORM_strp_sup (same width; a form the DIE reader
    leaves to pyelftools). How many were changed."""
    from elftools.elf.elffile import ELFFile

    data = bytearray(binary.read_bytes())
    with open(binary, "rb") as stream:
        header = ELFFile(stream).get_section_by_name(".debug_abbrev").header
    pos, end, changed = header["sh_offset"], header["sh_offset"] + header["sh_size"], 0
    while pos < end:
        code, pos = _uleb(data, pos)
        if code == 0:
            continue
        tag, pos = _uleb(data, pos)
        pos += 1  # children
        while True:
            attr, pos = _uleb(data, pos)
            form_at = pos
            form, pos = _uleb(data, pos)
            if attr == form == 0:
                break
            if form == 0x21:  # DW_FORM_implicit_const: its value follows
                _, pos = _uleb(data, pos)
            if tag == 0x0D and attr == 0x03 and form == 0x0E:  # DW_TAG_member, DW_AT_name, DW_FORM_strp
                data[form_at] = 0x1D
                changed += 1
    patched.write_bytes(bytes(data))
    return changed


def test_form_left_to_pyelftools(tmp_path):
    require("gcc")
    binary = tmp_path / "types"
    subprocess.run(["gcc", "-g", "-gdwarf-5", "-DWITH_PROBE", "-o", str(binary), str(C_DIR / "dwarf_types.c")],
                   check=True)
    assert _names_as_strp_sup(binary, tmp_path / "patched") > 0
    direct = _all_types(tmp_path / "patched", True)
    assert direct == _all_types(tmp_path / "patched", False)
    assert len(direct) > 100
    assert "'__unnamed'" in "\n".join(direct)  # a name pyelftools gives as a number: none
