"""``probegen lint``: check hand-written bpftrace scripts against the catalog.

``lint_file`` and ``lint_text`` return the findings (Diagnostics, sorted
by position); a script that cannot be read or parsed raises InputError
with one compiler-style message.
"""

from __future__ import annotations

from pathlib import Path

from probegen.catalog.model import Catalog
from probegen.errors import Diagnostic, InputError
from probegen.lint.checker import check_script
from probegen.lint.lexer import ScriptSyntaxError
from probegen.lint.parser import parse


def lint_text(text: str, path: str, catalog: Catalog, types=None,
              types_name: str = "the binary") -> list[Diagnostic]:
    """Findings for a script's text; ``path`` names it in messages.
    ``types`` is an optional probegen.typeinfo.TypeSource for struct casts."""
    return check_script(catalog, parse(text, path), types, types_name)


def lint_file(path: str | Path, catalog: Catalog, types=None,
              types_name: str = "the binary") -> list[Diagnostic]:
    shown = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(f"{shown}: error: no such script") from None
    except IsADirectoryError:
        raise InputError(f"{shown}: error: is a directory, not a script") from None
    except OSError as exc:
        raise InputError(f"{shown}: error: cannot read: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ScriptSyntaxError(shown, line, column, f"not UTF-8 text (byte 0x{data[exc.start]:02x})") from None
    return lint_text(text, shown, catalog, types, types_name)


__all__ = ["lint_file", "lint_text", "ScriptSyntaxError"]
