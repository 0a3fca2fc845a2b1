"""Reading the top of each compilation unit straight from the bytes.

The type index needs, of every unit, the names of the types defined at
its top (and in its C++ namespaces). On a program like SPDK's, 300 units
each repeat the same few hundred header types beside their functions'
DIEs: building a pyelftools DIE for each costs seconds, as does parsing
each unit's abbreviation table with pyelftools' construct structures.
Here each abbreviation becomes a plan of byte counts, so a DIE whose
attributes nobody needs is stepped over by arithmetic, a subtree is
jumped through DW_AT_sibling, and only the few attributes the index keeps
(name, size, declaring file and line) are decoded, for the few forms
compilers use for them; a DIE with any other form for one of them is
read by pyelftools instead, so values are always pyelftools' own.

Links are not trusted (as in ``probegen.dwarf.walk``): every step moves
forward inside its unit, and anything else is ``Damaged``.
"""

from __future__ import annotations

from elftools.dwarf.enums import ENUM_DW_AT, ENUM_DW_FORM, ENUM_DW_TAG

from probegen.dwarf.damage import Damaged

_F = ENUM_DW_FORM
_AT_SIBLING = ENUM_DW_AT["DW_AT_sibling"]
_AT_NAME = ENUM_DW_AT["DW_AT_name"]
_AT_BYTE_SIZE = ENUM_DW_AT["DW_AT_byte_size"]
_AT_DECL_FILE = ENUM_DW_AT["DW_AT_decl_file"]
_AT_DECL_LINE = ENUM_DW_AT["DW_AT_decl_line"]
_AT_DECLARATION = ENUM_DW_AT["DW_AT_declaration"]
_AT_STMT_LIST = ENUM_DW_AT["DW_AT_stmt_list"]
NAMESPACE = ENUM_DW_TAG["DW_TAG_namespace"]
TYPE_TAGS = {  # the tags of the types the index keeps
    ENUM_DW_TAG["DW_TAG_structure_type"]: "struct",
    ENUM_DW_TAG["DW_TAG_class_type"]: "struct",
    ENUM_DW_TAG["DW_TAG_union_type"]: "union",
    ENUM_DW_TAG["DW_TAG_enumeration_type"]: "enum",
    ENUM_DW_TAG["DW_TAG_typedef"]: "typedef",
}

# Forms by how their bytes are counted. Sizes in words: "offset" (4 or
# 8, by the unit's DWARF format), "address" (the unit's address size),
# "ref_addr" (the address size in DWARF 2, the offset size after).
_FIXED = {
    "DW_FORM_data1": 1, "DW_FORM_ref1": 1, "DW_FORM_flag": 1, "DW_FORM_strx1": 1, "DW_FORM_addrx1": 1,
    "DW_FORM_data2": 2, "DW_FORM_ref2": 2, "DW_FORM_strx2": 2, "DW_FORM_addrx2": 2,
    "DW_FORM_strx3": 3, "DW_FORM_addrx3": 3,
    "DW_FORM_data4": 4, "DW_FORM_ref4": 4, "DW_FORM_strx4": 4, "DW_FORM_addrx4": 4, "DW_FORM_ref_sup4": 4,
    "DW_FORM_data8": 8, "DW_FORM_ref8": 8, "DW_FORM_ref_sig8": 8, "DW_FORM_ref_sup8": 8,
    "DW_FORM_data16": 16,
    "DW_FORM_flag_present": 0, "DW_FORM_implicit_const": 0,
    "DW_FORM_strp": "offset", "DW_FORM_line_strp": "offset", "DW_FORM_sec_offset": "offset",
    "DW_FORM_strp_sup": "offset", "DW_FORM_GNU_ref_alt": "offset", "DW_FORM_GNU_strp_alt": "offset",
    "DW_FORM_addr": "address", "DW_FORM_ref_addr": "ref_addr",
}
# Variable-length forms: the kind of count that says how long they are.
_LEB, _CSTRING, _BLOCK1, _BLOCK2, _BLOCK4, _BLOCK_LEB, _INDIRECT = range(-7, 0)
_VARIABLE = {
    "DW_FORM_udata": _LEB, "DW_FORM_sdata": _LEB, "DW_FORM_ref_udata": _LEB, "DW_FORM_strx": _LEB,
    "DW_FORM_addrx": _LEB, "DW_FORM_loclistx": _LEB, "DW_FORM_rnglistx": _LEB,
    "DW_FORM_GNU_addr_index": _LEB, "DW_FORM_GNU_str_index": _LEB,
    "DW_FORM_string": _CSTRING,
    "DW_FORM_block1": _BLOCK1, "DW_FORM_block2": _BLOCK2, "DW_FORM_block4": _BLOCK4,
    "DW_FORM_block": _BLOCK_LEB, "DW_FORM_exprloc": _BLOCK_LEB,
    "DW_FORM_indirect": _INDIRECT,
}
_FORM_NAMES = {code: name for name, code in _F.items() if name in _FIXED or name in _VARIABLE}
# How a kept attribute's value is read (Abbrev's fields): an unsigned
# integer of some width, a ULEB128, a constant of the abbreviation, an
# offset into a string section, a string in place; or not here (ODD).
_UINT, _ULEB, _CONST, _STRP, _CSTR, _ODD = range(6)
# Slots of Abbrev.fields.
NAME, SIZE, LINE, FILE, SIBLING, STMT_LIST = range(6)
_SLOTS = {_AT_NAME: NAME, _AT_BYTE_SIZE: SIZE, _AT_DECL_LINE: LINE, _AT_DECL_FILE: FILE, _AT_SIBLING: SIBLING,
          _AT_STMT_LIST: STMT_LIST}
_SIBLING_FORMS = frozenset(_F[n] for n in ("DW_FORM_ref1", "DW_FORM_ref2", "DW_FORM_ref4", "DW_FORM_ref8",
                                           "DW_FORM_ref_udata"))
_IMPLICIT = _F["DW_FORM_implicit_const"]


def _reader(slot: int, form: int, implicit, offset_size: int) -> tuple[int, object]:
    """(kind, argument) reading a kept attribute as pyelftools would give
    it: an int for a number or a reference, bytes for a name."""
    name = _FORM_NAMES[form]
    if slot == NAME:
        if name in ("DW_FORM_strp", "DW_FORM_line_strp"):
            return _STRP, ".debug_str" if name == "DW_FORM_strp" else ".debug_line_str"
        return (_CSTR, None) if name == "DW_FORM_string" else (_ODD, None)
    if slot == SIBLING:  # a link in another form is not followed, as in walk.py
        return (_ULEB, None) if name == "DW_FORM_ref_udata" else \
            (_UINT, _FIXED[name]) if form in _SIBLING_FORMS else (_ODD, None)
    if slot == STMT_LIST and name == "DW_FORM_sec_offset":
        return _UINT, offset_size
    if name in ("DW_FORM_data1", "DW_FORM_data2", "DW_FORM_data4", "DW_FORM_data8"):
        return _UINT, _FIXED[name]
    if name == "DW_FORM_udata":
        return _ULEB, None
    if form == _IMPLICIT:
        return _CONST, implicit
    return _ODD, None


def uleb(data, pos: int) -> tuple[int, int]:
    """(value, position after) of the ULEB128 number at ``pos``."""
    byte = data[pos]
    if byte < 0x80:
        return byte, pos + 1
    value, shift = byte & 0x7F, 7
    while True:
        pos += 1
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos + 1
        shift += 7


def sleb(data, pos: int) -> tuple[int, int]:
    """(value, position after) of the SLEB128 number at ``pos``."""
    value, after = uleb(data, pos)
    if data[after - 1] & 0x40:
        value -= 1 << (7 * (after - pos))
    return value, after


def _skip_leb(data, pos: int) -> int:
    while data[pos] & 0x80:
        pos += 1
    return pos + 1


class Abbrev:
    """One abbreviation, as a plan for stepping over its DIEs.

    ``segments``: (fixed byte count, variable form kind or None) pairs, in
    order; a DIE is its code, then for each pair that many bytes and one
    variable-length value. ``fixed_size``: the byte count after the code
    when no form is of variable length. ``fields``: slot -> (segment,
    offset in it, kind, argument) for the attributes the index reads.
    ``odd``: one of name, size, line or file is in a form not read here.
    ``specs``: (attribute, form, implicit constant) of each attribute, and
    ``places`` its (segment, offset in it): for probegen.dwarf.dies.
    """

    __slots__ = ("tag", "has_children", "segments", "fixed_size", "fields", "declaration", "odd", "unknown_form",
                 "specs", "places")

    def __init__(self, tag: int, has_children: bool, specs, sizes: dict[str, int]):
        self.tag = tag
        self.specs = tuple(specs)
        self.unknown_form = None  # a form this module cannot step over: Damaged if a DIE uses it
        self.has_children = has_children
        self.declaration = False
        self.fields: dict[int, tuple] = {}
        segments: list[tuple[int, int | None]] = []
        places = []
        fixed = 0
        for attr, form, implicit in specs:
            places.append((len(segments), fixed))
            if attr == _AT_DECLARATION:
                self.declaration = True
            name = _FORM_NAMES.get(form)
            if name is None:
                self.unknown_form = form
                name = "DW_FORM_flag_present"  # a stand-in: the plan is never used
            slot = _SLOTS.get(attr)
            if slot is not None:
                reader = (_ODD, None) if self.unknown_form == form else _reader(slot, form, implicit, sizes["offset"])
                self.fields[slot] = (len(segments), fixed, *reader)
            size = _FIXED.get(name)
            if size is None:
                segments.append((fixed, _VARIABLE[name]))
                fixed = 0
            else:
                fixed += sizes.get(size, size)  # type: ignore[call-overload]
        segments.append((fixed, None))
        self.segments = tuple(segments)
        self.places = tuple(places)
        self.fixed_size = fixed if len(segments) == 1 else None
        self.odd = any(self.fields[s][2] == _ODD for s in (NAME, SIZE, LINE, FILE) if s in self.fields)


def unit_sizes(offset_size: int, address_size: int, version: int) -> dict[str, int]:
    """The sizes of a unit's forms that depend on it (see _FIXED)."""
    return {"offset": offset_size, "address": address_size,
            "ref_addr": address_size if version <= 2 else offset_size}


def parse_abbrevs(data, offset: int, sizes: dict[str, int], known: dict | None = None) -> dict[int, Abbrev]:
    """The abbreviation table at ``offset`` of .debug_abbrev's bytes, for
    units of these ``unit_sizes``.
    ``known`` maps the bytes of abbreviations already planned (with the
    sizes) to their plans: each unit has its own table, but most of its
    entries are byte for byte those of the other units."""
    table: dict[int, Abbrev] = {}
    known = {} if known is None else known
    pos = offset
    while True:
        code, pos = uleb(data, pos)
        if code == 0:
            return table
        start = pos
        tag, pos = uleb(data, pos)
        has_children = data[pos] != 0
        pos += 1
        specs = []
        while True:
            attr, form = data[pos], data[pos + 1]
            if attr < 0x80 and form < 0x80:  # nearly always: one byte each
                pos += 2
            else:
                attr, pos = uleb(data, pos)
                form, pos = uleb(data, pos)
            if attr == 0 and form == 0:
                break
            implicit = None
            if form == _IMPLICIT:
                implicit, pos = sleb(data, pos)
            specs.append((attr, form, implicit))
        key = (data[start:pos], *sizes.values())
        abbrev = known.get(key)
        if abbrev is None:
            abbrev = known[key] = Abbrev(tag, has_children, specs, sizes)
        table[code] = abbrev


class Unit:
    """The DIEs of one compilation unit, read from the section's bytes.

    ``names`` memoizes decoded names by (section, offset) across units:
    each header type's name is read once, not once per unit.
    ``info`` holds .debug_info from offset ``base`` on (the whole section,
    or only this unit): offsets given and taken are in ``info``, offsets
    in messages in the section.
    """

    def __init__(self, cu, info: bytes, strings: dict[str, bytes], abbrevs: dict[int, Abbrev],
                 names: dict | None = None, base: int = 0):
        self.cu = cu
        self.data = info
        self.base = base
        self.strings = strings
        self.abbrevs = abbrevs
        self.names = names if names is not None else {}
        self.start = cu.cu_offset - base
        self.end = self.start + cu.size
        if not 0 <= self.start <= self.end <= len(info):
            raise Damaged(f"the unit at {cu.cu_offset:#x} runs past the end of .debug_info")
        self.offset_size = 8 if cu.structs.dwarf_format == 64 else 4
        self.sizes = unit_sizes(self.offset_size, cu["address_size"], cu["version"])
        self.order = "little" if cu.structs.little_endian else "big"

    def die(self, offset: int) -> tuple[Abbrev | None, int, tuple]:
        """(abbreviation or None for a null entry, offset after the DIE,
        start of each of its segments)."""
        data = self.data
        code = data[offset]
        pos = offset + 1
        if code >= 0x80:
            code, pos = uleb(data, offset)
        if code == 0:
            return None, pos, ()
        abbrev = self.abbrevs.get(code)
        if abbrev is None:
            raise Damaged(f"DIE at {offset + self.base:#x} has abbreviation code {code}, not in its unit's table")
        if abbrev.unknown_form is not None:
            raise Damaged(f"DIE at {offset + self.base:#x} has an attribute of unknown form {abbrev.unknown_form:#x}")
        if abbrev.fixed_size is not None:
            starts = (pos,)
            pos += abbrev.fixed_size
        else:
            starts = []
            for fixed, variable in abbrev.segments:
                starts.append(pos)
                pos += fixed
                if variable is not None:
                    pos = self._skip(pos, variable)
        if pos > self.end:
            raise Damaged(f"the DIE at {offset + self.base:#x} runs past the end of its unit")
        return abbrev, pos, starts

    def _skip(self, pos: int, kind: int) -> int:
        data = self.data
        if kind == _LEB:
            return _skip_leb(data, pos)
        if kind == _CSTRING:
            end = data.find(b"\0", pos, self.end)
            if end < 0:
                raise Damaged(f"string at {pos + self.base:#x} runs past the end of its unit")
            return end + 1
        if kind == _BLOCK_LEB:
            length, pos = uleb(data, pos)
            return pos + length
        if kind == _INDIRECT:
            form, pos = uleb(data, pos)
            name = _FORM_NAMES.get(form)
            if name is None or name in ("DW_FORM_indirect", "DW_FORM_implicit_const"):
                raise Damaged(f"indirect attribute form {form:#x} at {pos + self.base:#x}")
            size = _FIXED.get(name)
            if size is None:
                return self._skip(pos, _VARIABLE[name])
            return pos + self.sizes.get(size, size)
        width = {_BLOCK1: 1, _BLOCK2: 2, _BLOCK4: 4}[kind]
        return pos + width + int.from_bytes(data[pos:pos + width], self.order)

    def value(self, abbrev: Abbrev, starts, slot: int):
        """The kept attribute in ``slot`` as pyelftools decodes it (int, or
        str for a name), or None if the DIE has none. Not for ODD fields."""
        field = abbrev.fields.get(slot)
        if field is None:
            return None
        segment, offset, kind, argument = field
        if kind == _CONST:
            return argument
        pos = starts[segment] + offset
        data = self.data
        if kind == _UINT:
            return int.from_bytes(data[pos:pos + argument], self.order)
        if kind == _ULEB:
            return uleb(data, pos)[0]
        if kind == _CSTR:
            return data[pos:data.index(b"\0", pos)].decode("utf-8", "replace")
        where = int.from_bytes(data[pos:pos + self.offset_size], self.order)
        key = (argument, where)
        text = self.names.get(key)
        if text is None:
            strings = self.strings.get(argument)
            if strings is None:
                raise Damaged(f"a name in {argument}, which the file does not have")
            end = strings.find(b"\0", where)
            if end < 0 or where >= len(strings):
                raise Damaged(f"name at {where:#x} of {argument} runs past its end")
            text = self.names[key] = strings[where:end].decode("utf-8", "replace")
        return text

    def type_fields(self, abbrev: Abbrev, starts) -> tuple:
        """(name, size, line, decl_file) of a type's DIE, as ``value``
        reads them; all None if it has no name. Not for ODD abbreviations."""
        value = self.value
        name = value(abbrev, starts, NAME)
        if name is None:
            return None, None, None, None
        return name, value(abbrev, starts, SIZE), value(abbrev, starts, LINE), value(abbrev, starts, FILE)

    def line_table_offset(self) -> int | None:
        """The unit DIE's DW_AT_stmt_list, as pyelftools would read it."""
        abbrev, _, starts = self.die(self.cu.cu_die_offset - self.base)
        field = abbrev.fields.get(STMT_LIST) if abbrev is not None else None
        if field is None:
            return None
        if field[2] == _ODD:
            attr = self.pyelftools_die(self.cu.cu_die_offset - self.base).attributes.get("DW_AT_stmt_list")
            return attr.value if attr is not None else None
        return self.value(abbrev, starts, STMT_LIST)

    def pyelftools_die(self, offset: int):
        """The DIE at ``offset`` as pyelftools reads it (not cached)."""
        from elftools.dwarf.die import DIE

        return DIE(cu=self.cu, stream=self.cu.dwarfinfo.debug_info_sec.stream, offset=offset + self.base)

    def next_sibling(self, offset: int, abbrev: Abbrev, after: int, starts) -> int:
        """Offset of the DIE following the one at ``offset`` and its subtree."""
        if not abbrev.has_children:
            return after
        field = abbrev.fields.get(SIBLING)
        if field is not None and field[2] != _ODD:
            target = self.start + self.value(abbrev, starts, SIBLING)
            if not after <= target < self.end:
                raise Damaged(f"DW_AT_sibling of the DIE at {offset + self.base:#x} points to {target + self.base:#x}, "
                              "outside what follows it")
            return target
        depth, pos = 1, after
        while depth:
            if pos >= self.end:
                raise Damaged(f"the subtree of the DIE at {offset + self.base:#x} runs past the end of its unit")
            inner, pos, _ = self.die(pos)
            if inner is None:
                depth -= 1
            elif inner.has_children:
                depth += 1
        return pos

    def children(self, offset: int, tags=None):
        """(offset, abbreviation, offset after, segment starts) of the
        children of the DIE at ``offset`` (of those with a tag in ``tags``,
        if given); Damaged where links go wrong."""
        abbrev, pos, _ = self.die(offset)
        if abbrev is None or not abbrev.has_children:
            return
        end = self.end
        die = self.die
        while True:
            if pos >= end:
                raise Damaged(f"children of the DIE at {offset + self.base:#x} run past the end of their unit")
            child, after, starts = die(pos)
            if child is None:
                return
            if tags is None or child.tag in tags:
                yield pos, child, after, starts
            pos = self.next_sibling(pos, child, after, starts) if child.has_children else after
