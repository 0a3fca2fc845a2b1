"""BCC tools from the catalog: one per group and one with every probe.

Each tool is a Python program for the system's /usr/bin/python3 (where
``import bcc`` works). Its C program reads every argument with
``bpf_usdt_readarg`` into a variable of the argument's exact width (BCC
reads nothing when the size differs from the note's), strings with a
bounded user-string read, and sends one event per hit through a perf
buffer; Python prints the same line the bpftrace script prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from probegen.catalog import Catalog
from probegen.catalog.ctype import Kind
from probegen.generators.lines import UNKNOWN_ENUM, Field, ProbeLine, Style, enum_tables, probe_lines, script_groups
from probegen.files.output import GeneratedFile
from probegen.generators.render import render
from probegen.generators.typesource import TypeSource

TEMPLATE = "bcc_tool.py.j2"

# ctypes spellings of BCC's exact-width types, for the Python event classes.
_CTYPES = {
    "s8": "ct.c_int8", "u8": "ct.c_uint8", "s16": "ct.c_int16", "u16": "ct.c_uint16",
    "s32": "ct.c_int32", "u32": "ct.c_uint32", "s64": "ct.c_int64", "u64": "ct.c_uint64",
}


@dataclass(frozen=True)
class EventField:
    name: str  # member of the event struct: f0, f1, ...
    field: Field
    c_decl: str  # the member in the C event struct
    py_type: str  # its ctypes type
    read: str  # C statements filling it from ctx
    formatter: str  # Python expression: a function of the raw value


def _bcc_type(field: Field) -> str:
    """BCC's exact-width type of the value: bpf_usdt_readarg reads nothing
    unless its size is the note's. Pointers and strings: the address."""
    if field.style in (Style.POINTER, Style.STRING):
        return "u64"
    if field.ctype.kind is Kind.ENUM:
        # The enum's own width: a packed enum member is 1 byte, and reading
        # 4 would take the next members' bytes into the value.
        signed = field.enum is not None and field.enum.signed
    else:
        signed = field.ctype.signed_on_x86  # as bpftrace prints it
    return f"{'s' if signed else 'u'}{field.size * 8}"


def _read(field: Field, member: str) -> str:
    """C statements reading the field into ev->member."""
    arg = field.index + 1  # bpf_usdt_readarg counts from 1
    if field.is_member:
        access = f"(({field.struct} *)ptr)->{field.member}"
        if field.style is Style.STRING and field.ctype.pointer_sized:
            # A char pointer member: read the pointer, then the string it
            # points to (BPF cannot dereference a user pointer itself).
            copy = (f"u64 str = 0; bpf_probe_read_user(&str, sizeof(str), &{access}); "
                    f"if (bpf_probe_read_user_str(ev->{member}, sizeof(ev->{member}), (void *)str) < 0) ev->{member}[0] = 0;")
        elif field.style is Style.STRING and field.ctype.size > 0:
            # A char array: its bytes exactly (a string read could run past
            # an array with no NUL), then the NUL the event has room for.
            copy = (f"if (bpf_probe_read_user(ev->{member}, {field.max_len}, {access}) < 0) ev->{member}[0] = 0; "
                    f"ev->{member}[{field.max_len}] = 0;")
        elif field.style is Style.STRING:  # a flexible char array: a bounded string read
            copy = f"if (bpf_probe_read_user_str(ev->{member}, sizeof(ev->{member}), {access}) < 0) ev->{member}[0] = 0;"
        else:
            copy = f"if (bpf_probe_read_user(&ev->{member}, sizeof(ev->{member}), &{access}) < 0) ev->{member} = 0;"
        return f"{{ u64 ptr = 0; bpf_usdt_readarg({arg}, ctx, &ptr); {copy} }}"
    if field.style is Style.STRING:
        return (f"{{ u64 ptr = 0; bpf_usdt_readarg({arg}, ctx, &ptr); "
                f"if (bpf_probe_read_user_str(ev->{member}, sizeof(ev->{member}), (void *)ptr) < 0) ev->{member}[0] = 0; }}")
    type_ = _bcc_type(field)
    return f"{{ {type_} v = 0; bpf_usdt_readarg({arg}, ctx, &v); ev->{member} = v; }}"


def _formatter(field: Field) -> str:
    style = field.style
    if style is Style.STRING:
        return "text"
    if style is Style.POINTER:
        return "pointer"
    if style is Style.HEX:
        return f"hexadecimal({field.size * 8})"
    if style is Style.ENUM:
        return f"ENUMS[{field.enum.name!r}]"
    return "str"


def event_fields(line: ProbeLine) -> list[EventField]:
    fields = []
    for number, field in enumerate(line.fields):
        name = f"f{number}"
        if field.style is Style.STRING:
            c_decl, py_type = f"char {name}[{field.max_len + 1}];", f"ct.c_char * {field.max_len + 1}"
        else:
            type_ = _bcc_type(field)
            c_decl, py_type = f"{type_} {name};", _CTYPES[type_]
        fields.append(EventField(name, field, c_decl, py_type, _read(field, name), _formatter(field)))
    return fields


def _python_raw_text(c_text: str) -> str:
    """C text for the tool's r\"\"\"...\"\"\" program string, which three quotes
    in a row would end (and what follows run as Python). C definitions
    have no string literals; only a comment quoting a name from the
    binary's DWARF could hold quotes, and there a space between them is
    harmless."""
    return re.sub(r'"(?=")', '" ', c_text)


def render_tool(catalog: Catalog, group: str, probes, types: TypeSource | None = None) -> str:
    lines = probe_lines(catalog, probes, types)
    structs = list(dict.fromkeys(s for l in lines for s in l.structs))
    return render(
        TEMPLATE,
        catalog=catalog,
        group=group,
        probes=[{"line": l, "id": i, "fields": event_fields(l)} for i, l in enumerate(lines)],
        enums=[{"name": t.name, "names": [(v, repr(n)) for v, n in t.names]} for t in enum_tables(lines)],
        definitions=_python_raw_text(types.definitions(structs)) if types is not None and structs else "",
        unknown=repr(UNKNOWN_ENUM),
    )


def render_files(catalog: Catalog, output: Path, types: TypeSource | None = None) -> list[GeneratedFile]:
    """``GROUP.py`` per group and ``all.py``, in ``output``."""
    output = Path(output)
    return [
        GeneratedFile(output / f"{stem}.py", render_tool(catalog, stem, probes, types), executable=True)
        for stem, probes in script_groups(catalog, reserved=("all",))
    ]
