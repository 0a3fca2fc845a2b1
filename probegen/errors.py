"""Errors that reach the user as messages, never as tracebacks: InputError (exit code 2), a message and
the Location it is about, if any. Named tuples: every command imports this module, so it stays cheap.
"""

from collections import namedtuple


class Location(namedtuple("Location", "path line column", defaults=(0, 0))):
    """A place in an input file, 1-based, as compilers print it."""

    __slots__ = ()

    def __str__(self) -> str:
        if self.line <= 0:
            return self.path
        return f"{self.path}:{self.line}:{self.column}" if self.column > 0 else f"{self.path}:{self.line}"


class Diagnostic(namedtuple("Diagnostic", "location message rule", defaults=("",))):
    """One error at one place; sorts by place. ``rule``: its kind, for reports (SARIF rule ids)."""

    __slots__ = ()

    def __str__(self) -> str:
        return printable(f"{self.location}: error: {self.message}")


def printable(text: str) -> str:
    """Text for one line of a terminal or a CI log: control characters as escapes, and the first ':' of
    a line starting '::' (doc/security.md)."""
    text = escape_controls(text)
    if text.lstrip(" ").startswith("::"):
        text = text.replace(":", "\\x3a", 1)  # only spaces come before it
    return text


def escape_controls(text: str) -> str:
    """Each character that is not printable as an escape (printable() is for a whole line); a byte of a
    name that is not UTF-8 (surrogateescape's U+DC80 to U+DCFF) as that byte, \\xff as the name has it."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\x{ord(c) & 0xff:02x}" if ord(c) < 0x100 or 0xDC80 <= ord(c) < 0xDD00
                   else f"\\u{ord(c):04x}" for c in text)


def printable_lines(text: str) -> str:
    return "\n".join(map(printable, text.split("\n")))


class InputError(Exception):
    """Bad input or usage (exit code 2); str() is the line shown, compiler style."""

    def __init__(self, message: str, location: Location | None = None):
        super().__init__(message)
        self.message = message
        self.location = location

    def __str__(self) -> str:
        return self.message if self.location is None else printable(f"{self.location}: error: {self.message}")


class CommandError(InputError):
    """A wrong use of the command being run, shown after its name, which cli sets as ``program``."""

    program = "probegen"

    def __str__(self) -> str:
        return printable(f"{self.program}: error: {self.message}")


class CatalogError(InputError):
    """A catalog's problems, all reported at once."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = sorted(diagnostics)
        count = len(self.diagnostics)
        summary = f"{count} error{'s' if count != 1 else ''} in catalog"
        super().__init__("\n".join([*map(str, self.diagnostics), summary]))


class NoDebugInfo(InputError):
    """A binary without DWARF (and no separate debug file): what may use it goes on without."""


class NoSuchMember(InputError):
    """A script's mistake, where a missing struct or an unprintable member may not be."""
