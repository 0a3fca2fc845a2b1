"""``probegen lint``: check hand-written bpftrace scripts against the catalog.

``lint_file`` and ``lint_text`` return the findings (Diagnostics, sorted
by position); a script that cannot be read or parsed raises InputError
with one compiler-style message.
"""

from dataclasses import dataclass, field
from pathlib import Path

from probegen.catalog.model import Catalog
from probegen.errors import Diagnostic, InputError, Location
from probegen.files.inputs import read_input
from probegen.checks.lint.checker import Checker
from probegen.checks.lint.lexer import ScriptSyntaxError, positions
from probegen.checks.lint.parser import parse, room_for_nesting


def lint_text(text: str, path: str, catalog: Catalog, types=None,
              types_name: str = "the binary") -> list[Diagnostic]:
    """Findings for a script's text; ``path`` names it in messages.
    ``types`` is an optional probegen.generators.typesource.TypeSource for struct casts."""
    with room_for_nesting():
        return Checker(catalog, parse(text, path), types, types_name).run()


def lint_file(path: str | Path, catalog: Catalog, types=None,
              types_name: str = "the binary") -> list[Diagnostic]:
    data = read_input(path, "script")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = Location(str(path), *positions(data.decode("latin-1"))(exc.start))
        raise ScriptSyntaxError(f"cannot parse: not UTF-8 text (byte 0x{data[exc.start]:02x})", where) from None
    return lint_text(text, str(path), catalog, types, types_name)


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


@dataclass
class LintReport:
    """Findings of several scripts, and each script that could not be read
    or parsed, with why (the others are still checked)."""

    findings: list[Diagnostic] = field(default_factory=list)
    failed: list[tuple[str, InputError]] = field(default_factory=list)
    checked: int = 0

    @property
    def errors(self) -> list[str]:
        return [str(exc) for _, exc in self.failed]

    @property
    def exit_code(self) -> int:
        return 2 if self.failed else 1 if self.findings else 0

    def summary(self) -> str:
        text = f"{_count(len(self.findings), 'finding')} in {_count(self.checked, 'script')}"
        if self.failed:
            text += f"; {_count(len(self.failed), 'script')} could not be read or parsed"
        return text


def lint_paths(paths, catalog: Catalog, types=None, types_name: str = "the binary") -> LintReport:
    report = LintReport()
    for path in paths:
        try:
            report.findings += lint_file(path, catalog, types, types_name)
            report.checked += 1
        except InputError as exc:
            report.failed.append((str(path), exc))
    return report


__all__ = ["LintReport", "ScriptSyntaxError", "lint_file", "lint_paths", "lint_text"]
