"""The BCC tool of a catalog: the catalog's probes, spans and enums as tables, then
probegen's BCC runtime (runtime/bcc.py, copied in: the tool runs under the system's
python3, where BCC lives and probegen need not be installed)."""

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import probegen.runtime.bcc
from probegen.catalog import Catalog
from probegen.catalog.model import Arg
from probegen.files.output import GeneratedFile
from probegen.generators.lines import Field, Style, arg_fields, probe_line, struct_definitions
from probegen.generators.render import render

if TYPE_CHECKING:  # it loads drgn, which only --binary needs
    from probegen.dwarf.types import DwarfTypes

KIND, WRITES_DIRECTORY = "bcc", True

# Characters read of a string without max_len (bpftrace's default is 63; BCC
# reads into per-CPU memory): SPDK's NQNs (char[224]) whole.
BCC_DEFAULT_MAX_LEN = 255
ROW_WIDTH = 114  # a table row's longest one-line form (the tool's lines: 120)


def field_format(field: Field, arg: Arg) -> str:
    """As probegen.runtime.bcc.Field reads it."""
    bits = field.size * 8
    if field.style is Style.STRING:
        if field.length is not None:  # exactly that many bytes, up to max_len
            return f"buf:{field.length}:{field.max_len}"
        if field.is_member and not field.ctype.pointer_sized:  # a char array
            return f"chars:{field.max_len}" if field.ctype.size > 0 else f"flex:{field.max_len}"
        return f"str:{BCC_DEFAULT_MAX_LEN if not field.is_member and arg.max_len is None else field.max_len}"
    if field.style is Style.POINTER:
        return "ptr"
    if field.style is Style.ENUM:  # an integer printed by name
        return f"{'s' if field.enum.signed else 'u'}{bits}:{field.enum.name}"
    return {Style.HEX: "x", Style.SIGNED: "s"}.get(field.style, "u") + str(bits)


def _arg_format(catalog: Catalog, arg: Arg, types: "DwarfTypes | None") -> str:
    return field_format(arg_fields(catalog, arg, types)[0], arg)


def field_row(field: Field, arg: Arg) -> str:
    member = ((field.struct, field.member),) if field.is_member else ()
    return repr((field.label, field.index, field_format(field, arg)) + member)


def _row(values: tuple, rest: str) -> str:
    """The values then rest, on one line if it fits, else on two."""
    head = repr(values)[1:-1]
    row = f"({head}, {rest})"
    return row if len(row) <= ROW_WIDTH else f"({head},\n     {rest})"


def render_tool(catalog: Catalog, types: "DwarfTypes | None" = None) -> str:
    lines = [probe_line(catalog, p, types) for p in catalog.probes]
    probes = [_row((line.probe.name, line.probe.group, line.probe.doc, line.arg_count),
                   "[%s]" % ", ".join(field_row(f, line.probe.note_args[f.index]) for f in line.fields))
              for line in lines]
    enums = []
    for table in {f.enum.name: f.enum for line in lines for f in line.fields if f.enum is not None}.values():
        decl = catalog.enum(table.name)
        enums.append((repr(table.name), repr((decl.strip_prefix if decl else "", dict(table.names)))))
    spans = []
    for span in catalog.spans:
        keys = [(k.name, _arg_format(catalog, k.start, types), k.start.index, k.end.index) for k in span.key]
        by = [(b.name, _arg_format(catalog, b.arg, types), b.arg.index, "start" if b.at_start else "end")
              for b in span.by]
        spans.append(_row((span.name, span.doc, span.start.name, span.end.name), f"{keys!r}, {by!r}"))
    return render(
        "bcc_tool.py.j2", catalog=catalog, provider=repr(catalog.provider), probes=probes, spans=spans, enums=enums,
        description=repr(f"Trace the USDT probes of provider {catalog.provider}: "
                         "a line per hit, counts, span histograms, timelines."),
        # in a raw triple-quoted string, which three quotes would end (only a comment
        # quoting a DWARF name could hold any: a space there is harmless)
        definitions=re.sub(r'"(?=")', '" ', struct_definitions(lines, types)), runtime=runtime_source(),
    )


def runtime_source() -> str:
    """runtime/bcc.py without its docstring, which opens it."""
    source = Path(probegen.runtime.bcc.__file__).read_text(encoding="utf-8")
    return source[source.index('"""\n', 3) + 4:]


def tool_name(catalog: Catalog) -> str:
    """PROVIDER.py, or PROVIDER_usdt.py where it would shadow a module the tool imports (a
    script's directory is first on sys.path)."""
    shadowed = catalog.provider in sys.stdlib_module_names or catalog.provider == "bcc"
    return f"{catalog.provider}{'_usdt' if shadowed else ''}.py"


def render_files(catalog: Catalog, output: Path, types: "DwarfTypes | None" = None) -> list[GeneratedFile]:
    return [GeneratedFile(Path(output) / tool_name(catalog), render_tool(catalog, types), executable=True)]
