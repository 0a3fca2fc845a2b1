"""Enum name tables for scripts: names taken from the binary's DWARF.

``enum_table`` gives (value, display name) rows; the templates
``structs_enum_map.bt.j2`` (a bpftrace BEGIN block) and
``structs_enum_map.py.j2`` (a Python dict for BCC tools) print them.
"""

from __future__ import annotations

from probegen.catalog.ctype import is_identifier
from probegen.errors import InputError


def display_name(name: str, strip_prefix: str = "") -> str:
    if strip_prefix and name.startswith(strip_prefix) and len(name) > len(strip_prefix):
        return name[len(strip_prefix):]
    return name


def enum_table(enumerators, strip_prefix: str = "") -> list[tuple[int, str]]:
    """(value, name) rows; the first name wins where values repeat."""
    rows: dict[int, str] = {}
    for e in enumerators:
        rows.setdefault(e.value, display_name(e.name, strip_prefix))
    return list(rows.items())


def render_enum_maps(types, enums: list[str], style: str, strip_prefix: str = "") -> str:
    """bpftrace BEGIN assignments (style "bpftrace") or a Python dict per
    enum (style "bcc") for these enums of ``types`` (a DwarfTypes)."""
    from probegen.generators.render import render

    tables = []
    for name in enums:
        enum = types.enum(name)
        map_name = enum.name or name.split()[-1]  # a C name: "ns__Color" for C++'s "ns::Color"
        if not is_identifier(map_name):
            raise InputError(f"enum name '{name}' cannot name a map")
        tables.append((map_name, enum_table(enum.enumerators, strip_prefix)))
    template = {"bpftrace": "structs_enum_map.bt.j2", "bcc": "structs_enum_map.py.j2"}[style]
    return render(template, tables=tables, source=types.info.binary.name)
