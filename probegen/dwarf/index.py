"""Where each named struct, union, enum and typedef is defined.

Only the top-level DIEs of each compilation unit and of its C++
namespaces are read (types defined inside functions are not reachable by
name; a type in a namespace is indexed as "ns::S"), straight from the
section's bytes by ``probegen.dwarf.scan``: subtrees are jumped through
DW_AT_sibling, DIEs of no interest stepped over without being decoded.
The index maps a name to its definitions, one per distinct fingerprint
(tag, size, declaring file and line): the same header type repeated in
every unit collapses to one entry, and two different types with one name
stay apart so they can be reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from probegen.dwarf import filetable, scan
from probegen.dwarf.damage import Damaged
from probegen.dwarf.lines import check_line_header
from probegen.dwarf.sections import section_bytes as _section_bytes

_C_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Entry:
    kind: str  # "struct", "union", "enum", "typedef"
    cu_offset: int
    die_offset: int
    size: int  # -1 when the DIE has none (typedefs)
    line: int


class TypeIndex:
    def __init__(self, names: dict[str, list[tuple]]):
        # name -> [(kind, cu_offset, die_offset, size, line), ...]: plain
        # data, which the cache stores as JSON (probegen.dwarf.cache).
        self.names = names

    def lookup(self, name: str) -> list[Entry]:
        return [Entry(*row) for row in self.names.get(name, ())]

    def close_names(self, name: str, limit: int = 5) -> list[str]:
        import difflib

        lowered = name.lower()
        close = [n for n in self.names if lowered in n.lower()]
        close.sort(key=lambda n: (len(n), n))
        close = close[:limit]
        if len(close) < limit:
            for n in difflib.get_close_matches(name, list(self.names), n=limit, cutoff=0.6):
                if n not in close:
                    close.append(n)
        return close[:limit]

    @classmethod
    def build(cls, dwarfinfo) -> "TypeIndex":
        names: dict[str, list[tuple]] = {}
        seen: set[tuple] = set()
        strings = {name: _section_bytes(section) for name, section in
                   ((".debug_str", dwarfinfo.debug_str_sec), (".debug_line_str", dwarfinfo.debug_line_str_sec))
                   if section is not None}
        info = _section_bytes(dwarfinfo.debug_info_sec)
        line_bytes = _section_bytes(dwarfinfo.debug_line_sec)
        abbrev_bytes = _section_bytes(dwarfinfo.debug_abbrev_sec)
        tables: dict[tuple, dict] = {}
        plans: dict[tuple, scan.Abbrev] = {}
        texts: dict[tuple, str] = {}
        for cu in dwarfinfo.iter_CUs():
            sizes = scan.unit_sizes(8 if cu.structs.dwarf_format == 64 else 4, cu["address_size"], cu["version"])
            unit_key = (cu["debug_abbrev_offset"], *sizes.values())
            if unit_key not in tables:
                tables[unit_key] = scan.parse_abbrevs(abbrev_bytes, cu["debug_abbrev_offset"], sizes, plans)
            unit = scan.Unit(cu, info, strings, tables[unit_key], texts)
            files = None
            for offset, kind, name, size, line, decl_file in _named_types(unit):
                row = (kind, cu.cu_offset, offset, _number(size, -1), _number(line, 0))
                if files is None:
                    files = _file_names(dwarfinfo, cu, unit.line_table_offset(), line_bytes, strings)
                where = files.get(decl_file, "") if decl_file is not None else ""
                fingerprint = (name, kind, row[3], row[4], where)
                if fingerprint in seen:
                    continue
                seen.add(fingerprint)
                names.setdefault(name, []).append(row)
        return cls(names)

    def source_names(self, c_name: str) -> list[str]:
        """The names that are not C names and that structs prints as ``c_name``."""
        from probegen.dwarf.cnames import c_identifier

        return sorted(n for n in self.names if not _C_NAME.fullmatch(n) and c_identifier(n) == c_name)

    def qualified_names(self) -> dict[int, str]:
        """DIE offset -> full name, for the types inside C++ namespaces."""
        return {row[2]: name for name, rows in self.names.items() if "::" in name for row in rows}


# C++ namespaces nest; deeper than this is damage, not code.
_MAX_NAMESPACES = 64
_READ_TAGS = frozenset((scan.NAMESPACE, *scan.TYPE_TAGS))  # what the index reads at the top of a unit


def _named_types(unit: scan.Unit):
    """(offset, kind, name, size, line, decl_file) of the named type
    definitions at the top of a unit and inside its C++ namespaces
    ("ns::S"); size, line and decl_file as pyelftools gives their values,
    or None."""
    pending = [(unit.cu.cu_die_offset, "")]
    expanded: set[int] = set()  # damaged sibling links can make one namespace a child of several
    value = unit.value
    while pending:
        parent, prefix = pending.pop()
        for offset, abbrev, after, starts in unit.children(parent, _READ_TAGS):
            tag = abbrev.tag
            if tag == scan.NAMESPACE:
                text = _pyelftools_fields(unit.pyelftools_die(offset))[0] if abbrev.odd else \
                    value(abbrev, starts, scan.NAME)
                if prefix.count("::") >= _MAX_NAMESPACES:
                    raise Damaged(f"namespaces nested more than {_MAX_NAMESPACES} deep at {offset:#x}")
                if offset not in expanded:
                    expanded.add(offset)
                    pending.append((offset, f"{prefix}{text or '(anonymous namespace)'}::"))
                continue
            kind = scan.TYPE_TAGS.get(tag)
            if kind is None or abbrev.declaration:
                continue
            if abbrev.odd:
                text, size, line, decl_file = _pyelftools_fields(unit.pyelftools_die(offset))
            else:
                text, size, line, decl_file = unit.type_fields(abbrev, starts)
            if text is not None:
                yield offset, kind, prefix + text, size, line, decl_file


def _pyelftools_fields(die) -> tuple:
    """(name, size, line, decl_file) of a DIE pyelftools read: values as
    it gives them, the name decoded (None if not a string)."""
    name, size, line, decl_file = (attr.value if attr is not None else None for attr in
                                   map(die.attributes.get,
                                       ("DW_AT_name", "DW_AT_byte_size", "DW_AT_decl_line", "DW_AT_decl_file")))
    return (name.decode("utf-8", "replace") if isinstance(name, bytes) else None), size, line, decl_file


def _number(value, default: int) -> int:
    return value if type(value) is int and value >= 0 else default


def _file_names(dwarfinfo, cu, stmt_list: int | None, line_bytes: bytes | None = None,
                strings: dict[str, bytes] | None = None) -> dict[int, str]:
    """DW_AT_decl_file index -> file path, from the unit's line table header
    at ``stmt_list``: read from ``line_bytes`` (.debug_line) where
    filetable can, else by pyelftools."""
    if type(stmt_list) is not int or dwarfinfo.debug_line_sec is None:
        return {}
    if line_bytes is not None and 0 <= stmt_list < len(line_bytes):
        names = filetable.file_names(line_bytes, stmt_list, dwarfinfo.config.little_endian, strings or {})
        if names is not None:
            return names
    return pyelftools_file_names(dwarfinfo, cu, stmt_list)


def pyelftools_file_names(dwarfinfo, cu, stmt_list: int) -> dict[int, str]:
    """``_file_names`` as pyelftools reads the header (checked first)."""
    check_line_header(dwarfinfo, cu, stmt_list)
    # pyelftools' public way in (line_program_for_CU) reads the unit's top
    # DIE through its construct-parsed abbreviation table: 5 ms a unit.
    parse_at = getattr(dwarfinfo, "_parse_line_program_at_offset", None)
    program = parse_at(stmt_list, cu.structs) if parse_at is not None else dwarfinfo.line_program_for_CU(cu)
    if program is None:
        return {}
    header = program.header
    dirs = [d.decode("utf-8", "replace") if isinstance(d, bytes) else str(d) for d in header["include_directory"]]
    return filetable.paths(header["version"], dirs, [(entry.name, entry.dir_index) for entry in header["file_entry"]])
