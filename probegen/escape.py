"""Escaping for text that goes into generated C, bpftrace and Python.

Names are validated as C identifiers when the catalog loads; free text
(docs) passes through these before it reaches a generated file.
"""

from __future__ import annotations


def one_line(text: str) -> str:
    """Collapse whitespace, including newlines, to single spaces."""
    return " ".join(str(text).split())


def c_comment(text: str) -> str:
    """Text safe inside a /* */ block comment (and a // comment)."""
    return one_line(text).replace("*/", "* /").replace("/*", "/ *")


def c_string(text: str) -> str:
    """Body of a C (or bpftrace) double-quoted string literal."""
    out = []
    for char in str(text):
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    return "".join(out)


def printf_literal(text: str) -> str:
    """Text that a printf format string prints as it is."""
    return c_string(text).replace("%", "%%")


def hash_comment(text: str) -> str:
    """Text safe in a '#' or '//' line comment: one line, no line splice."""
    line = one_line(text)
    return line + " ." if line.endswith("\\") else line
