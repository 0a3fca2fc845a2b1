"""``probegen lint``: hand-written bpftrace scripts checked against the catalog.

The findings are Diagnostics, sorted by position; a script that cannot be
read or parsed raises one InputError (a compiler-style message).
"""

from pathlib import Path

from probegen.catalog.model import Catalog
from probegen.errors import Diagnostic, Location
from probegen.files.inputs import read_input
from probegen.checks.lint.checker import Checker
from probegen.checks.lint.lexer import ScriptSyntaxError, positions
from probegen.checks.lint.parser import parse, room_for_nesting


@room_for_nesting()
def lint_text(text: str, path: str, catalog: Catalog, types=None, types_name: str | None = None) -> list[Diagnostic]:
    """``path`` names the script in messages; ``types``, a
    probegen.dwarf.DwarfTypes named ``types_name``, checks struct members."""
    return Checker(catalog, parse(text, path), types, types_name).run()


def lint_file(path: str | Path, catalog: Catalog, types=None, types_name: str | None = None) -> list[Diagnostic]:
    data = read_input(path, "script")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = Location(str(path), *positions(data.decode("latin-1"))(exc.start))
        raise ScriptSyntaxError(f"cannot parse: not UTF-8 text (byte 0x{data[exc.start]:02x})", where) from None
    return lint_text(text, str(path), catalog, types, types_name)
