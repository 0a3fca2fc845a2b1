"""Where each named struct, union, enum and typedef is defined.

Only the top-level DIEs of each compilation unit and of its C++
namespaces are read (types defined inside functions are not reachable by
name; a type in a namespace is indexed as "ns::S"); subtrees are skipped
through DW_AT_sibling, checked by ``probegen.dwarf.walk``. The index maps a name to its
definitions, one per distinct fingerprint (tag, size, declaring file and
line):
the same header type repeated in every unit collapses to one entry, and
two different types with one name stay apart so they can be reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from probegen.dwarf.damage import Damaged
from probegen.dwarf.lines import check_line_header
from probegen.dwarf.walk import children

_C_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TAGS = {
    "DW_TAG_structure_type": "struct",
    "DW_TAG_class_type": "struct",
    "DW_TAG_union_type": "union",
    "DW_TAG_enumeration_type": "enum",
    "DW_TAG_typedef": "typedef",
}


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
        for cu in dwarfinfo.iter_CUs():
            top = cu.get_top_DIE()
            files = None
            for die, text in _named_types(top):
                attrs = die.attributes
                kind = _TAGS[die.tag]
                row = (kind, cu.cu_offset, die.offset, _number(attrs.get("DW_AT_byte_size"), -1),
                       _number(attrs.get("DW_AT_decl_line"), 0))
                if files is None:
                    files = _file_names(dwarfinfo, cu)
                decl_file = attrs.get("DW_AT_decl_file")
                where = files.get(decl_file.value, "") if decl_file else ""
                fingerprint = (text, kind, row[3], row[4], where)
                if fingerprint in seen:
                    continue
                seen.add(fingerprint)
                names.setdefault(text, []).append(row)
            # pyelftools caches every parsed DIE on its CU; on a big binary
            # that is gigabytes. Keep only the top DIE (pyelftools 0.29-0.33
            # layout; skipped if it changes).
            if isinstance(getattr(cu, "_dielist", None), list) and isinstance(getattr(cu, "_diemap", None), list):
                cu._dielist = cu._dielist[:1]
                cu._diemap = cu._diemap[:1]
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


def _named_types(top):
    """(DIE, name) of the named type definitions at the top of a unit and
    inside its C++ namespaces ("ns::S")."""
    pending = [(top, "")]
    while pending:
        parent, prefix = pending.pop()
        for die in children(parent):
            attrs = die.attributes
            name = attrs.get("DW_AT_name")
            text = name.value.decode("utf-8", "replace") if name is not None and isinstance(name.value, bytes) else None
            if die.tag == "DW_TAG_namespace":
                if prefix.count("::") >= _MAX_NAMESPACES:
                    raise Damaged(f"namespaces nested more than {_MAX_NAMESPACES} deep at {die.offset:#x}")
                pending.append((die, f"{prefix}{text or '(anonymous namespace)'}::"))
                continue
            if die.tag not in _TAGS or text is None or "DW_AT_declaration" in attrs:
                continue
            yield die, prefix + text


def _number(attr, default: int) -> int:
    value = attr.value if attr is not None else None
    return value if type(value) is int and value >= 0 else default


def _file_names(dwarfinfo, cu) -> dict[int, str]:
    """DW_AT_decl_file index -> file path, from the unit's line table header."""
    check_line_header(dwarfinfo, cu)
    program = dwarfinfo.line_program_for_CU(cu)
    if program is None:
        return {}
    header = program.header
    dirs = [d.decode("utf-8", "replace") if isinstance(d, bytes) else str(d) for d in header["include_directory"]]
    base = 0 if header["version"] >= 5 else 1  # DWARF 5 counts files from 0
    names = {}
    for i, entry in enumerate(header["file_entry"]):
        name = entry.name.decode("utf-8", "replace") if isinstance(entry.name, bytes) else str(entry.name)
        d = entry.dir_index if type(entry.dir_index) is int else 0
        if header["version"] < 5:
            d -= 1  # DWARF 4: directory 0 is the unit's own, not in the list
        if 0 <= d < len(dirs) and not name.startswith("/"):
            name = f"{dirs[d]}/{name}"
        names[i + base] = name
    return names
