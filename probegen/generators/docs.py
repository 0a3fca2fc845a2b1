"""The Markdown reference of every probe: what it means, what it carries, and a bpftrace
one-liner to try it. Catalog text goes through md_text or md_cell, so a ``|``, ``*`` or
``<`` in it cannot break a table or become markup.
"""

import html
import re
from pathlib import Path

from probegen.catalog import Catalog
from probegen.catalog.model import Arg, Probe
from probegen.bpftrace import DEFAULT_STRLEN, conversion
from probegen.generators.escape import one_line
from probegen.generators.lines import Style, style_of
from probegen.files.output import GeneratedFile
from probegen.generators.render import render

KIND, WRITES_DIRECTORY = "docs", False
TEMPLATE = "docs.md.j2"

# Characters that start markup: inline anywhere in a line (underscores only emphasise at word
# edges, so spdk_nvmf_qpair stays readable unescaped), and at its start a heading's, list's or
# rule's (a list number keeps its digits and has its '.' or ')' escaped).
_MARKUP = re.compile(r"[\\`*\[\]~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|^[#+=-]")
_LIST_NUMBER = re.compile(r"^(\d+)([.)])")

PLACEHOLDER = "BINARY"  # the program or library path the reader substitutes


def md_text(text: str) -> str:
    """Catalog prose as one line of Markdown that renders as written."""
    line = _MARKUP.sub(r"\\\g<0>", html.escape(one_line(text), quote=False))
    return _LIST_NUMBER.sub(r"\1\\\2", line)


def md_cell(text: str) -> str:
    """Catalog prose inside a table cell: also no unescaped '|'."""
    return md_text(text).replace("|", "\\|")


def md_code(text: str) -> str:
    """Text as inline code: a backtick run longer than any inside it."""
    text = one_line(text)
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _one_liner_value(arg: Arg, probe: Probe) -> tuple[str, str]:
    index, style = f"arg{arg.index}", style_of(arg.ctype, arg.hex)
    if style is Style.STRING and arg.length:  # exactly its length in bytes, unprintable ones escaped
        return "%r", f"buf({index}, arg{probe.arg(arg.length).index})"
    if style is Style.STRING:  # 63 characters at most on 0.17, as the note under the table says
        return "%s", f"str({index})"
    if style is Style.ENUM:  # by number: names need the lookups generated scripts have
        return "%d", index
    return conversion(style.value, arg.ctype.size), index


def one_liner(catalog: Catalog, probe: Probe) -> str:
    values = [_one_liner_value(arg, probe) for arg in probe.args]
    fmt = " ".join([probe.name] + [f"{arg.name}={conv}" for arg, (conv, _) in zip(probe.args, values)])
    exprs = "".join(f", {expr}" for _, expr in values)
    return (f"bpftrace -e 'usdt:{PLACEHOLDER}:{catalog.provider}:{probe.name} "
            f'{{ printf("{fmt}\\n"{exprs}); }}\'')


def render_docs(catalog: Catalog, output: Path | None = None) -> str:
    return render(
        TEMPLATE, catalog=catalog, output=output.name if output else "", placeholder=PLACEHOLDER, strlen=DEFAULT_STRLEN,
        strings=any(style_of(a.ctype, a.hex) is Style.STRING for p in catalog.probes for a in p.args),
        enums=[e for e in catalog.enums if e.enumerators],  # names from DWARF are not listed here
        md_text=md_text, md_cell=md_cell, md_code=md_code, one_liner=one_liner,
    )


def render_files(catalog: Catalog, output: Path, types=None) -> list[GeneratedFile]:
    return [GeneratedFile(output, render_docs(catalog, output))]
