"""The BCC tool of a catalog: one Python program with every probe and span.

The tool is probegen's BCC runtime (``probegen/runtime/bcc.py``, copied in
whole: the tool runs with the system's /usr/bin/python3, where ``import
bcc`` works and probegen need not be installed) followed by the catalog's
part made here: the BPF C program and the tables the runtime reads. The C
reads every argument with ``bpf_usdt_readarg`` into a variable of the
argument's exact width (BCC reads nothing when the size differs from the
note's), strings with a bounded user-string read into per-CPU memory (an
event may exceed the 512-byte BPF stack), and either sends one event per
hit (the line the bpftrace script prints), counts hits, or keeps span
starts in a hash map and sends each matched span's duration.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import probegen.runtime.bcc
from probegen.catalog import Catalog
from probegen.catalog.model import Arg
from probegen.catalog.ctype import Kind
from probegen.generators.lines import UNKNOWN_ENUM, Field, ProbeLine, Style, arg_fields, enum_tables, probe_lines
from probegen.files.output import GeneratedFile
from probegen.generators.render import render
from probegen.generators.typesource import TypeSource

TEMPLATE = "bcc_tool.py.j2"

# Characters a BCC tool reads of a string the catalog gives no max_len:
# the 63 of bpftrace scripts are bpftrace's BPFTRACE_STRLEN default, while
# BCC reads into per-CPU memory; 255 holds SPDK's NQNs (char[224]) whole.
BCC_DEFAULT_MAX_LEN = 255
# Span starts kept at once per span (the BPF hash map's size).
MAX_IN_FLIGHT = 10240


@dataclass(frozen=True)
class EventField:
    name: str  # member of the event struct: f0, f1, ... (key.k0: of its key)
    field: Field
    c_decl: str  # the member in the C event struct
    read: str  # C statements filling it from ctx
    row: str  # the runtime's table row: (label, member, C type or char array size, format)


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


def _spec(field: Field) -> tuple:
    """How the runtime prints the value (probegen.runtime.bcc.formatter)."""
    style = field.style
    if style is Style.STRING:
        return ("string",)
    if style is Style.POINTER:
        return ("pointer",)
    if style is Style.HEX:
        return ("hex", field.size * 8)
    if style is Style.ENUM:
        return ("enum", field.enum.name)
    return ("int",)


def bcc_max_len(field: Field, arg: Arg | None) -> Field:
    """The field with BCC's string bound: the catalog's max_len if it gives
    one (or a char array's size), else BCC_DEFAULT_MAX_LEN."""
    if field.style is Style.STRING and not field.is_member and arg is not None and arg.max_len is None:
        return replace(field, max_len=BCC_DEFAULT_MAX_LEN)
    return field


def event_field(field: Field, member: str, label: str | None = None, within: str = "") -> EventField:
    """The field as ``member`` of an event struct (``within="key."``: of its key)."""
    c_type = field.max_len + 1 if field.style is Style.STRING else _bcc_type(field)
    c_decl = f"char {member}[{c_type}];" if field.style is Style.STRING else f"{c_type} {member};"
    row = repr((label or field.label, member, c_type, _spec(field)))
    return EventField(within + member, field, c_decl, _read(field, within + member), row)


def event_fields(line: ProbeLine) -> list[EventField]:
    args = line.probe.note_args
    return [
        event_field(bcc_max_len(field, args[field.index] if field.index < len(args) else None), f"f{number}")
        for number, field in enumerate(line.fields)
    ]


def _arg_field(catalog: Catalog, arg: Arg, types: TypeSource | None) -> Field:
    """The field of an argument itself (not its members)."""
    return bcc_max_len(arg_fields(catalog, arg, types)[0], arg)


def span_tables(catalog: Catalog, types: TypeSource | None) -> tuple[list[dict], dict[str, list[dict]]]:
    """The spans for the template, and per probe name its span blocks (the
    C a start or end probe runs for each span it begins or ends)."""
    spans, blocks = [], {}
    for number, span in enumerate(catalog.spans):
        if span.key:
            keys = [event_field(_arg_field(catalog, k.start, types), f"k{i}", k.name, within="key.")
                    for i, k in enumerate(span.key)]
            key_decls = [k.c_decl for k in keys]
            # The end reads its own argument into the start's member (its width).
            end_keys = [replace(k, field=_arg_field(catalog, key.end, types)) for k, key in zip(keys, span.key)]
            start_reads, end_reads = [k.read for k in keys], [_read(k.field, k.name) for k in end_keys]
        else:  # by thread
            keys, key_decls = [], ["u32 tid;"]
            start_reads = end_reads = ["ev->key.tid = bpf_get_current_pid_tgid();  /* the thread id */"]
        bys = [event_field(_arg_field(catalog, b.arg, types), f"b{i}", b.name) for i, b in enumerate(span.by)]
        spans.append({
            "id": number, "span": span, "key_decls": key_decls, "by_decls": [b.c_decl for b in bys],
            "row": repr((span.name, span.doc, span.start.name, span.end.name))[1:-1],
            "key_rows": [k.row for k in keys], "by_rows": [b.row for b in bys],
        })
        for probe, start, key_reads in ((span.start, True, start_reads), (span.end, False, end_reads)):
            by_reads = [b.read for b, by in zip(bys, span.by) if by.at_start == start]
            blocks.setdefault(probe.name, []).append(
                {"span": number, "start": start, "key_reads": key_reads, "by_reads": by_reads})
    return spans, blocks


def _python_raw_text(c_text: str) -> str:
    """C text for the tool's r\"\"\"...\"\"\" program string, which three quotes
    in a row would end (and what follows run as Python). C definitions
    have no string literals; only a comment quoting a name from the
    binary's DWARF could hold quotes, and there a space between them is
    harmless."""
    return re.sub(r'"(?=")', '" ', c_text)


def _strip_prefix(catalog: Catalog, enum_name: str) -> str:
    """The prefix the enum's names print without, for names the tool reads
    from the traced binary's DWARF."""
    decl = catalog.enum(enum_name)
    return decl.strip_prefix if decl is not None else ""


def render_tool(catalog: Catalog, types: TypeSource | None = None) -> str:
    lines = probe_lines(catalog, catalog.probes, types)
    structs = list(dict.fromkeys(s for l in lines for s in l.structs))
    spans, blocks = span_tables(catalog, types)
    # Every span's key and by are probe arguments: the probes' enum tables hold their names.
    return render(
        TEMPLATE,
        catalog=catalog,
        provider=repr(catalog.provider),
        description=repr(f"Trace the USDT probes of provider {catalog.provider}: a line per hit, counts, span histograms."),
        probes=[
            {"line": l, "id": i, "fields": event_fields(l), "span_blocks": blocks.get(l.probe.name, []),
             "row": repr((l.probe.name, l.probe.group, l.probe.doc))[1:-1]}
            for i, l in enumerate(lines)
        ],
        spans=spans,
        enums=[{"name": repr(t.name), "names": repr(dict(t.names)), "strip": repr(_strip_prefix(catalog, t.name))}
               for t in enum_tables(lines)],
        definitions=_python_raw_text(types.definitions(structs)) if types is not None and structs else "",
        unknown=repr(UNKNOWN_ENUM),
        runtime=runtime_source(),
        max_in_flight=MAX_IN_FLIGHT,
    )


def runtime_source() -> str:
    """probegen/runtime/bcc.py, the part of every tool no catalog changes."""
    return Path(probegen.runtime.bcc.__file__).read_text(encoding="utf-8")


def tool_name(catalog: Catalog) -> str:
    """PROVIDER.py; PROVIDER_usdt.py when Python would import PROVIDER.py in
    place of a module the tool imports (a script's directory comes first
    on sys.path: a tool named json.py or bcc.py would import itself)."""
    shadowed = catalog.provider in sys.stdlib_module_names or catalog.provider == "bcc"
    return f"{catalog.provider}{'_usdt' if shadowed else ''}.py"


def render_files(catalog: Catalog, output: Path, types: TypeSource | None = None) -> list[GeneratedFile]:
    """The catalog's one tool, ``PROVIDER.py`` in ``output``."""
    return [GeneratedFile(Path(output) / tool_name(catalog), render_tool(catalog, types), executable=True)]
