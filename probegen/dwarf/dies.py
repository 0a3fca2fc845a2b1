"""DIEs of the types being loaded, decoded straight from the bytes.

``probegen.dwarf.load`` reads a type's DIEs, its members', enumerators'
and array bounds': on a program like SPDK's, a few thousand. pyelftools
builds each through its construct structures; here each abbreviation of
``probegen.dwarf.scan`` becomes a plan of where to find and how to
decode the attributes load.py reads (no others: declaring file and line
are stepped over), and a DIE's attributes are decoded only when asked
for (a C++ class's member functions are never read). Values are those
pyelftools gives (ints; bytes for strings; True for flags; lists of
bytes for blocks). A DIE with a wanted attribute in a form this module
does not decode (strx, as clang writes names) is read by pyelftools, as is a
reference of a form leading out of .debug_info, and a member location
other than a constant.

Links are not trusted: children are walked by ``scan.Unit.children``,
and a reference must land inside its unit's DIEs, as pyelftools checks.
"""

from __future__ import annotations

from collections import namedtuple

from elftools.dwarf.enums import ENUM_DW_AT, ENUM_DW_FORM, ENUM_DW_TAG

from probegen.dwarf import scan
from probegen.dwarf.damage import Damaged
from probegen.dwarf.sections import section_bytes
from probegen.dwarf.walk import PyelftoolsDie, constant_offset


# The same fields as pyelftools' AttributeValue that probegen reads.
Attr = namedtuple("Attr", ("value", "form"))

_TAG_NAMES = {code: name for name, code in ENUM_DW_TAG.items()}
_AT_NAMES = {code: name for name, code in ENUM_DW_AT.items()}
_FORM_NAMES = {code: name for name, code in ENUM_DW_FORM.items()}
# The attributes probegen.dwarf.load reads: no other is decoded.
_WANTED = frozenset(ENUM_DW_AT[name] for name in (
    "DW_AT_name", "DW_AT_type", "DW_AT_byte_size", "DW_AT_encoding", "DW_AT_alignment", "DW_AT_declaration",
    "DW_AT_external", "DW_AT_data_member_location", "DW_AT_bit_size", "DW_AT_bit_offset", "DW_AT_data_bit_offset",
    "DW_AT_const_value", "DW_AT_count", "DW_AT_upper_bound", "DW_AT_lower_bound", "DW_AT_prototyped",
))
_LOCAL_REFS = frozenset(("DW_FORM_ref1", "DW_FORM_ref2", "DW_FORM_ref4", "DW_FORM_ref8", "DW_FORM_ref_udata"))

# How each form's value is decoded: (kind, width). Widths in words as in
# scan's unit sizes ("offset", "address", "ref_addr").
_UNSIGNED, _BOOL, _TRUE, _IMPLICIT, _ULEB, _SLEB, _CSTRING, _STRP, _BLOCK, _BLOCKN = range(10)
_DECODE = {
    "DW_FORM_data1": (_UNSIGNED, 1), "DW_FORM_data2": (_UNSIGNED, 2), "DW_FORM_data4": (_UNSIGNED, 4),
    "DW_FORM_data8": (_UNSIGNED, 8),
    "DW_FORM_ref1": (_UNSIGNED, 1), "DW_FORM_ref2": (_UNSIGNED, 2), "DW_FORM_ref4": (_UNSIGNED, 4),
    "DW_FORM_ref8": (_UNSIGNED, 8), "DW_FORM_ref_udata": (_ULEB, None),
    "DW_FORM_ref_addr": (_UNSIGNED, "ref_addr"), "DW_FORM_sec_offset": (_UNSIGNED, "offset"),
    "DW_FORM_addr": (_UNSIGNED, "address"),
    "DW_FORM_udata": (_ULEB, None), "DW_FORM_sdata": (_SLEB, None),
    "DW_FORM_flag": (_BOOL, 1), "DW_FORM_flag_present": (_TRUE, 0), "DW_FORM_implicit_const": (_IMPLICIT, 0),
    "DW_FORM_string": (_CSTRING, None),
    "DW_FORM_strp": (_STRP, ".debug_str"), "DW_FORM_line_strp": (_STRP, ".debug_line_str"),
    "DW_FORM_block1": (_BLOCKN, 1), "DW_FORM_block2": (_BLOCKN, 2), "DW_FORM_block4": (_BLOCKN, 4),
    "DW_FORM_block": (_BLOCK, None), "DW_FORM_exprloc": (_BLOCK, None),
}


def _plan(abbrev: scan.Abbrev, sizes: dict) -> tuple | None:
    """(attribute name, form name, kind, width or constant, segment, offset
    in it) of each wanted attribute, or None where the form of one is not
    decoded here."""
    plan = []
    for (attr, form, implicit), (segment, offset) in zip(abbrev.specs, abbrev.places):
        if attr not in _WANTED:
            continue
        form_name = _FORM_NAMES.get(form, form)
        decode = _DECODE.get(form_name)
        if decode is None:
            return None
        kind, width = decode
        width = implicit if kind == _IMPLICIT else sizes.get(width, width)
        plan.append((_AT_NAMES[attr], form_name, kind, width, segment, offset))
    return tuple(plan)


class UnitReader:
    """The DIEs of one unit (a pyelftools CompileUnit, for its header)."""

    def __init__(self, dies: "DieReader", cu, unit: scan.Unit):
        self.dies = dies
        self.cu = cu
        self.unit = unit
        self.base = unit.base
        self.first = cu.cu_die_offset
        self.little_endian = unit.order == "little"
        self._plans: dict[int, tuple | None] = {}

    def die(self, offset: int) -> "Die":
        if not self.first <= offset < self.unit.end + self.base:
            raise Damaged(f"reference to {offset:#x}, outside the unit at {self.cu.cu_offset:#x}")
        known = self.dies.memo.get(offset)
        if known is not None:
            return known
        abbrev, _, starts = self.unit.die(offset - self.base)
        die = self.dies.memo[offset] = Die(self, offset, abbrev, starts)
        return die

    def pyelftools_die(self, offset: int):
        return self.unit.pyelftools_die(offset - self.base)

    def attributes(self, offset: int, abbrev: scan.Abbrev, starts) -> dict:
        """The wanted attributes of the DIE at ``offset``, whose segments
        start at ``starts`` (as scan.Unit.die gives them)."""
        key = id(abbrev)
        if key not in self._plans:
            self._plans[key] = _plan(abbrev, self.unit.sizes)
        plan = self._plans[key]
        if plan is None:
            return self.pyelftools_die(offset).attributes
        unit = self.unit
        data, order = unit.data, unit.order
        attributes = {}
        for name, form, kind, width, segment, place in plan:
            pos = starts[segment] + place
            if kind == _UNSIGNED:
                value = int.from_bytes(data[pos:pos + width], order)
            elif kind == _ULEB:
                value = scan.uleb(data, pos)[0]
            elif kind == _SLEB:
                value = scan.sleb(data, pos)[0]
            elif kind == _TRUE:
                value = True
            elif kind == _IMPLICIT:
                value = width
            elif kind == _BOOL:
                value = data[pos] != 0
            elif kind == _CSTRING:
                value = data[pos:data.index(b"\0", pos, unit.end)]  # there: scan.Unit.die stepped over it
            elif kind == _STRP:
                value = self._string(width, int.from_bytes(data[pos:pos + unit.offset_size], order))
            else:  # a block: its bytes as a list, as pyelftools gives them
                if kind == _BLOCK:
                    length, pos = scan.uleb(data, pos)
                else:
                    length = int.from_bytes(data[pos:pos + width], order)
                    pos += width
                value = list(data[pos:pos + length])
            attributes[name] = Attr(value, form)
        return attributes

    def _string(self, section: str, where: int) -> bytes:
        strings = self.unit.strings.get(section)
        if strings is None:
            raise Damaged(f"a name in {section}, which the file does not have")
        end = strings.find(b"\0", where)
        if end < 0 or where >= len(strings):
            raise Damaged(f"name at {where:#x} of {section} runs past its end")
        return strings[where:end]


class Die:
    """One DIE: what pyelftools' DIE offers that ``probegen.dwarf.load``
    reads, attributes decoded on first use."""

    __slots__ = ("_unit", "offset", "tag", "has_children", "_abbrev", "_starts", "_attributes")

    def __init__(self, unit: UnitReader, offset: int, abbrev: scan.Abbrev | None, starts):
        self._unit = unit
        self.offset = offset
        self._abbrev = abbrev
        self._starts = starts
        self._attributes = None
        if abbrev is None:  # a null entry where a DIE was expected
            self.tag, self.has_children = None, False
        else:
            self.tag = _TAG_NAMES.get(abbrev.tag, abbrev.tag)
            self.has_children = abbrev.has_children

    @property
    def attributes(self) -> dict[str, Attr]:
        if self._attributes is None:
            self._attributes = {} if self._abbrev is None else \
                self._unit.attributes(self.offset, self._abbrev, self._starts)
        return self._attributes

    @property
    def little_endian(self) -> bool:
        return self._unit.little_endian

    def children(self):
        unit = self._unit
        for offset, _, _, _ in unit.unit.children(self.offset - unit.base):
            yield unit.die(offset + unit.base)

    def get_DIE_from_attribute(self, name: str):
        attr = self.attributes[name]
        if attr.form in _LOCAL_REFS:
            return self._unit.die(self._unit.cu.cu_offset + attr.value)
        if attr.form == "DW_FORM_ref_addr":
            return self._unit.dies.unit_containing(attr.value).die(attr.value)
        # .debug_types, a supplementary file: pyelftools'
        return PyelftoolsDie(self._unit.pyelftools_die(self.offset).get_DIE_from_attribute(name))

    def constant_offset(self, block: list[int]) -> int | None:
        """A DWARF 2 member location, DW_OP_plus_uconst N (or DW_OP_constu
        N); None for any other expression."""
        if len(block) >= 2 and block[0] in (0x23, 0x10):
            value, after = scan.uleb(bytes(block), 1)
            if after == len(block):
                return value
        return constant_offset(block, self._unit.cu.structs)


class DieReader:
    """DIEs of one file's .debug_info, by offset, each read once."""

    def __init__(self, dwarf):
        self.dwarf = dwarf
        self.memo: dict[int, Die] = {}
        self._sections: dict[str, bytes | None] = {}
        self._units: dict[int, UnitReader] = {}
        self._tables: dict[tuple, dict] = {}
        self._plans: dict[tuple, scan.Abbrev] = {}

    def section(self, name: str) -> bytes | None:
        if name not in self._sections:
            attribute = {".debug_abbrev": "debug_abbrev_sec",
                         ".debug_str": "debug_str_sec", ".debug_line_str": "debug_line_str_sec"}[name]
            self._sections[name] = section_bytes(getattr(self.dwarf, attribute, None))
        return self._sections[name]

    def unit_at(self, cu_offset: int) -> UnitReader:
        reader = self._units.get(cu_offset)
        if reader is None:
            reader = self._units[cu_offset] = self._open(self.dwarf.get_CU_at(cu_offset))
        return reader

    def unit_containing(self, offset: int) -> UnitReader:
        return self.unit_at(self.dwarf.get_CU_containing(offset).cu_offset)

    def _open(self, cu) -> UnitReader:
        sizes = scan.unit_sizes(8 if cu.structs.dwarf_format == 64 else 4, cu["address_size"], cu["version"])
        key = (cu["debug_abbrev_offset"], *sizes.values())
        if key not in self._tables:
            abbrevs = self.section(".debug_abbrev")
            if abbrevs is None:
                raise Damaged("no .debug_abbrev section")
            self._tables[key] = scan.parse_abbrevs(abbrevs, cu["debug_abbrev_offset"], sizes, self._plans)
        strings = {name: data for name in (".debug_str", ".debug_line_str")
                   if (data := self.section(name)) is not None}
        stream = self.dwarf.debug_info_sec.stream
        stream.seek(cu.cu_offset)
        unit = scan.Unit(cu, stream.read(cu.size), strings, self._tables[key], base=cu.cu_offset)
        return UnitReader(self, cu, unit)
