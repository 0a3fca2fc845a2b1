"""Escaping for catalog text (docs, file names) in generated C, bpftrace, Python, YAML and
Markdown: each function makes text safe for one place, where it can neither end that
place (a comment, a string) nor start a new line of code.
"""

import re

from probegen.catalog.cvalidate import HIDDEN

# Where a comment delimiter or a trigraph is broken by a space: ??/ is a backslash (a line splice
# at a line's end) and ??= a '#' where trigraphs are on (gcc -trigraphs, -std=c11 without GNU extensions).
_C_COMMENT_BREAKS = re.compile(r"(?<=\*)(?=/)|(?<=/)(?=\*)|(?<=\?\?)(?=[=/'()!<>-])")
# A comment on line 1 or 2 of a Python file matching this sets the source encoding:
# "coding: utf-7" would let later text decode to code.
_PYTHON_CODING = re.compile(r"(?<=coding)(?=[:=])")
# Words `probegen trace` replaces or reads anywhere in a script (the file holding the
# probes, the pid, the string size).
_TRACE_MARKERS = re.compile(r"(?<=__EXE_)(?=_)|(?<=__PID_)(?=_)|(?<=BPFTRACE_STRLEN)(?==)")
# The body of a bpftrace (or Python) string literal: a lone surrogate that stands for a
# file name's byte (surrogateescape) is that byte again, any other cannot be written.
_C_STRING = {code: f"\\x{code:02x}" for code in [*range(0x20), 0x7F]}
_C_STRING.update({code: "?" for code in range(0xD800, 0xE000)})
_C_STRING.update({code: f"\\x{code - 0xDC00:02x}" for code in range(0xDC80, 0xDD00)})
_C_STRING.update({ord('"'): '\\"', ord("\\"): "\\\\", ord("\n"): "\\n", ord("\t"): "\\t"})


def _escape(match: re.Match) -> str:
    code = ord(match[0])
    code -= 0xDC00 if 0xDC80 <= code <= 0xDCFF else 0  # surrogateescape's stand-in for a byte: that byte
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(text: str) -> str:
    """Whitespace, line separators included, collapsed to single spaces; every other
    character of HIDDEN shown as an escape (\\xNN, \\uNNNN)."""
    return HIDDEN.sub(_escape, " ".join(str(text).split()))


def c_comment(text: str) -> str:
    """Text safe in a /* */ or // comment: one line, no comment delimiter, no trigraph, no
    line splice (the breaks never fall at the line's end)."""
    return _C_COMMENT_BREAKS.sub(" ", hash_comment(text))


def c_string(text: str) -> str:
    """Body of a bpftrace double-quoted string literal (also valid in a Python one). Not for
    C, where trigraphs would need escapes bpftrace refuses."""
    return str(text).translate(_C_STRING)


def printf_literal(text: str) -> str:
    """Text that a printf format string prints as one_line shows it: a control character
    (C1's CSI, a file name's byte) or bidi override reaches the terminal as an escape."""
    return c_string(one_line(text)).replace("%", "%%")


def hash_comment(text: str) -> str:
    """Text safe in a '#' or '//' line comment (bpftrace, YAML, shell)."""
    # A backslash ending a line joins the next line to it (C, and the C a bpftrace script
    # hands to clang): a '//' comment would swallow it.
    line = one_line(text)
    return line + " ." if line.endswith("\\") else line


def bpftrace_comment(text: str) -> str:
    """Text safe in a bpftrace '//' comment: none of the markers `probegen trace` acts on."""
    return _TRACE_MARKERS.sub(" ", hash_comment(text))


def python_comment(text: str) -> str:
    """Text safe in a Python '#' comment on any line: no encoding declaration."""
    return _PYTHON_CODING.sub(" ", hash_comment(text))


def html_comment(text: str) -> str:
    """Text safe in an HTML (Markdown) <!-- --> comment: one line, no '--'."""
    return re.sub(r"-(?=-)", "- ", one_line(text))
