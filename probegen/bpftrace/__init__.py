"""What probegen knows about bpftrace, in one place: printf conversions, string and literal sizes,
what each version can do (Debian 12's 0.17 and 13's 0.23.2 are in use), attach-point strings,
keywords, and the lexemes of a script that markers are looked for in.
"""

import itertools
import re
import subprocess

# bpftrace 0.17's default BPFTRACE_STRLEN: the bytes of a str() buffer and
# of a string literal, its NUL included, on the 512-byte BPF stack; it
# refuses more than STRLEN_LIMIT.
DEFAULT_STRLEN = 64
DEFAULT_MAX_LEN = DEFAULT_STRLEN - 1
STRLEN_LIMIT = 200
# From 0.21, strings live off the stack, up to max_strlen (by default
# 1024; a longer str() is shortened, with a warning).
BIG_STRINGS = (0, 21)
BIG_STRLEN = 1024
BPF_STACK = 512  # a probe's stack, in bytes
# 0.17 reads USDT arguments arg0..arg5 only on x86_64 ("x86_64 doesn't
# support arg6"); later ones print as UNREADABLE.
MAX_ARG_INDEX = 5
UNREADABLE = "?"
# 0.17's keywords: a member path through one is a syntax error
# (measured: $p->if fails, $p->pid, ->comm, ->count, ->BEGIN load).
KEYWORDS = frozenset("if else unroll while return break continue offsetof sizeof".split())


def conversion(style: str, size: int) -> str:
    """printf conversion of a value printed in this style (lines.Style's value; an enum: by name)."""
    long = "l" if size == 8 else ""
    return {"signed": f"%{long}d", "unsigned": f"%{long}u", "hex": f"0x%{long}x",
            "pointer": "%p", "string": "%s", "enum": "%s"}[style]


def cut_literal(text: str) -> str:
    """``text`` cut to the DEFAULT_MAX_LEN bytes a string literal holds on
    bpftrace 0.17: one longer literal stops the whole script from loading."""
    sizes = itertools.accumulate(len(char.encode("utf-8", "surrogatepass")) for char in text)
    return "".join(char for char, size in zip(text, sizes) if size <= DEFAULT_MAX_LEN)


def holds_big_strings(bpftrace: str) -> bool:
    """The bpftrace at this path says it is 0.21 or later."""
    try:
        out = subprocess.run([bpftrace, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    match = re.search(r"v(\d+)\.(\d+)", out)
    return match is not None and (int(match[1]), int(match[2])) >= BIG_STRINGS


# bpftrace 0.17 unescapes an attach-point string twice (see doc/security.md):
# a backslash is written as four, a quote as \", any other byte outside
# printable ASCII as \xHH.
_ATTACH = [chr(byte) if 0x20 <= byte < 0x7F else f"\\x{byte:02x}" for byte in range(256)]
_ATTACH[0x5C], _ATTACH[0x22] = "\\\\\\\\", '\\"'


def attach_string(data: bytes) -> str:
    """``data`` as a bpftrace 0.17 attach-point string, byte for byte: one token of printable ASCII."""
    return '"' + "".join(_ATTACH[byte] for byte in data) + '"'


COMMENT = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)", re.S)  # closed or not
# What a script may hold, as bpftrace 0.17's lexer sees it: markers count
# only where they stand in code, never inside a comment or a string (a
# quoted name there would end the string and become code).
LEXEME = re.compile(
    rf"(?P<comment>{COMMENT.pattern})"
    r'|(?P<string>"(?:[^"\\\n]|\\[^\n])*(?:"|$))'
    r"|\busdt:(?P<usdt>__EXE__|\*):(?:(?P<provider>[A-Za-z_]\w*):)?(?P<name>[A-Za-z_]\w*)\b"
    r"|\b(?:uprobe|uretprobe):(?P<exe>__EXE__)(?=:)"
    r"|(?P<pid>__PID__)",
    re.S | re.M,
)
# One BEGIN and one END probe per program, in every version.
SPECIAL_PROBE = re.compile(r"^\s*(BEGIN|END)\b", re.M)
