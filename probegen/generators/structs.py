"""A binary's types as text for scripts: C definitions bpftrace 0.17 loads
(``structs.h.j2``, planned by probegen.generators.cdecl) and enum name
tables (``structs_enum_map.bt.j2``, a bpftrace BEGIN block;
``structs_enum_map.py.j2``, a Python dict for BCC tools).
"""

from __future__ import annotations

from probegen.catalog.ctype import is_identifier
from probegen.dwarf import DwarfTypes
from probegen.errors import InputError
from probegen.generators.cdecl import Planner, order_definitions
from probegen.generators.render import render


def render_definitions(types: DwarfTypes, names: list[str], enums: list[str] = (), annotate: bool = False) -> str:
    """C definitions of these types and all they need, for bpftrace."""
    roots = [types.aggregate(n) for n in names] + [types.enum(n) for n in enums]
    planner = Planner(annotate=annotate)
    try:
        forward, defined = order_definitions(roots)
        plans = [planner.plan(t) for t in defined]  # type: ignore[arg-type]
    except InputError as exc:  # what C cannot say of this file's types
        raise InputError(f"{types.info.binary}: error: {exc}") from None
    return render(
        "structs.h.j2", forward=forward, plans=plans,
        source=types.info.binary.name, build_id=types.info.build_id,
    )


def enum_table(enumerators, strip_prefix: str = "") -> list[tuple[int, str]]:
    """(value, name) rows; the first name wins where values repeat."""
    rows: dict[int, str] = {}
    for e in enumerators:
        strip = strip_prefix and e.name.startswith(strip_prefix) and len(e.name) > len(strip_prefix)
        rows.setdefault(e.value, e.name[len(strip_prefix):] if strip else e.name)
    return list(rows.items())


def render_enum_maps(types: DwarfTypes, enums: list[str], style: str, strip_prefix: str = "") -> str:
    """bpftrace BEGIN assignments (style "bpftrace") or a Python dict per
    enum (style "bcc") for these enums of ``types``."""
    tables = []
    for name in enums:
        enum = types.enum(name)
        map_name = enum.name or name.split()[-1]  # a C name: "ns__Color" for C++'s "ns::Color"
        if not is_identifier(map_name):
            raise InputError(f"enum name '{name}' cannot name a map")
        tables.append((map_name, enum_table(enum.enumerators, strip_prefix)))
    template = {"bpftrace": "structs_enum_map.bt.j2", "bcc": "structs_enum_map.py.j2"}[style]
    return render(template, tables=tables, source=types.info.binary.name)
