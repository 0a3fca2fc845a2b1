"""Split a bpftrace script into tokens, each with its line and column.

bpftrace's syntax is not context free at the top level: an attach point
such as ``usdt:/opt/spdk/bin/nvmf_tgt:spdk:nvmf_ctrlr_create`` contains
slashes, while a ``/`` after it opens a predicate. So the lexer keeps a
little state: at the top level it reads whole attach points, C
definitions (``struct x { ... };``) and preprocessor lines as single
tokens; inside predicates and blocks it reads C-like expression tokens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from probegen.errors import InputError

# Token kinds.
ATTACH = "attach point"
CDEF = "C definition"
PREPROC = "preprocessor line"
PRED_START = "predicate start"
PRED_END = "predicate end"
IDENT = "identifier"
VAR = "variable"  # $name
POSITIONAL = "positional parameter"  # $1, $#
MAP = "map"  # @name, or @ alone
INT = "integer"
STRING = "string"
PUNCT = "punctuation"
EOF = "end of file"

# Longest first, so "<<=" wins over "<<" and "<".
_OPERATORS = sorted(
    """-> ++ -- == != <= >= && || << >> += -= *= /= %= &= |= ^= <<= >>=
    + - * / % & | ^ ! ~ < > = ? : ; , . ( ) [ ] { }""".split(),
    key=len, reverse=True,
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"[0-9][0-9A-Za-z_]*")
# Characters bpftrace 0.17 takes unquoted in an attach point (seen: it
# rejects '+', '?', '@', '=', '~', '%'; a path with them must be quoted).
_ATTACH_CHAR = re.compile(r"[A-Za-z0-9_\-./*:\[\]$]")
_C_DEFINITION_START = re.compile(r"(struct|union|enum|typedef)\b")
# After a definition's '}': "name;" of a typedef, or the plain ';'.
_DEFINITION_END = re.compile(r"[A-Za-z_0-9 \t,*]*;")


class ScriptSyntaxError(InputError):
    """A script that cannot be parsed: one message with its position."""

    def __init__(self, path: str, line: int, column: int, message: str):
        self.path, self.line, self.column = path, line, column
        super().__init__(f"{path}:{line}:{column}: error: cannot parse: {message}")


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    line: int
    column: int

    def describe(self) -> str:
        if self.kind in (EOF, PRED_START, PRED_END):
            return self.kind if self.kind == EOF else f"'{self.text}'"
        return f"'{self.text}'"


class _Lexer:
    def __init__(self, text: str, path: str):
        self.text = text
        self.path = path
        self.pos = 0
        self.line = 1  # line of position "counted"
        self.line_start = 0  # where that line starts
        self.counted = 0
        self.tokens: list[Token] = []
        self.depth = 0  # braces open; 0 is the top level
        self.in_predicate = False
        self.nesting = 0  # parentheses and brackets open in a predicate

    # -- helpers ---------------------------------------------------------
    def where(self, pos: int) -> tuple[int, int]:
        """(line, column) of ``pos``. Tokens come in order, so lines are
        counted on from the last position asked: linear in the script,
        however long its lines."""
        if pos < self.line_start:  # an error pointing back: count afresh
            return self.text.count("\n", 0, pos) + 1, pos - self.text.rfind("\n", 0, pos)
        newlines = self.text.count("\n", self.counted, pos)
        if newlines:
            self.line += newlines
            self.line_start = self.text.rfind("\n", self.counted, pos) + 1
        self.counted = max(self.counted, pos)
        return self.line, pos - self.line_start + 1

    def column(self, pos: int | None = None) -> int:
        return self.where(self.pos if pos is None else pos)[1]

    def error(self, message: str, pos: int | None = None):
        line, column = self.where(self.pos if pos is None else pos)
        raise ScriptSyntaxError(self.path, line, column, message)

    def emit(self, kind: str, start: int, end: int):
        line, column = self.where(start)
        self.tokens.append(Token(kind, self.text[start:end], line, column))
        self.pos = end

    def at_line_start(self) -> bool:
        self.where(self.pos)
        return not self.text[self.line_start:self.pos].strip()

    def skip_space_and_comments(self):
        text = self.text
        while self.pos < len(text):
            if text[self.pos].isspace():
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    self.error("comment never closed ('*/' missing)")
                self.pos = end + 2
            else:
                return

    # -- top level -------------------------------------------------------
    def preprocessor_line(self):
        start, end = self.pos, self.pos
        while True:  # a backslash at the end of a line continues it
            newline = self.text.find("\n", end)
            if newline < 0:
                end = len(self.text)
                break
            end = newline
            last = end - 1 if end > start and self.text[end - 1] == "\r" else end
            if not (last > start and self.text[last - 1] == "\\"):
                break
            end += 1
        self.emit(PREPROC, start, end)

    def c_definition(self):
        """``struct name { ... };`` and the like, up to the closing brace
        (or, with no brace, the semicolon) and an optional semicolon."""
        start, pos, depth = self.pos, self.pos, 0
        while pos < len(self.text):
            char = self.text[pos]
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    pos += 1
                    rest = _DEFINITION_END.match(self.text, pos)
                    if rest:  # "} name;" of a typedef, or the plain ";"
                        pos = rest.end()
                    self.emit(CDEF, start, pos)
                    return
            elif char == ";" and depth == 0:
                self.emit(CDEF, start, pos + 1)
                return
            pos += 1
        self.error("C definition never closed", start)

    def attach_point(self):
        """Everything up to whitespace, ',' or '{': paths included."""
        start, pos = self.pos, self.pos
        while pos < len(self.text):
            char = self.text[pos]
            if char.isspace() or char in ",{":
                break
            if self.text.startswith(("//", "/*"), pos):
                break
            if char == '"':
                close = self.text.find('"', pos + 1)
                if close < 0:
                    self.error("string never closed", pos)
                pos = close
            elif not _ATTACH_CHAR.match(char):
                self.error(f"unexpected '{char}' in attach point; quote a path that has it "
                           f"(usdt:\"/path\":provider:name)", pos)
            pos += 1
        self.emit(ATTACH, start, pos)

    def top_level(self):
        char = self.text[self.pos]
        if char == "#" and self.at_line_start():
            self.preprocessor_line()
        elif char == "{":
            self.emit(PUNCT, self.pos, self.pos + 1)
            self.depth = 1
        elif char == ",":
            self.emit(PUNCT, self.pos, self.pos + 1)
        elif char == "/":
            self.emit(PRED_START, self.pos, self.pos + 1)
            self.in_predicate, self.nesting = True, 0
        elif char == "}":
            self.error("'}' with no block open")
        elif _C_DEFINITION_START.match(self.text, self.pos):
            self.c_definition()
        else:
            self.attach_point()

    # -- expressions -----------------------------------------------------
    def string(self):
        start, pos = self.pos, self.pos + 1
        while pos < len(self.text):
            char = self.text[pos]
            if char == "\\":
                pos += 2
                continue
            if char == '"':
                self.emit(STRING, start, pos + 1)
                return
            if char == "\n":
                break
            pos += 1
        self.error("string never closed", start)

    def expression_token(self):
        text, pos = self.text, self.pos
        char = text[pos]
        if char == '"':
            return self.string()
        match = _IDENT.match(text, pos)
        if match:
            return self.emit(IDENT, pos, match.end())
        match = _NUMBER.match(text, pos)
        if match:
            return self.emit(INT, pos, match.end())
        if char == "$":
            match = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|#)").match(text, pos)
            if not match:
                self.error("'$' must start a variable ($name) or a parameter ($1)")
            kind = VAR if _IDENT.match(text, pos + 1) else POSITIONAL
            return self.emit(kind, pos, match.end())
        if char == "@":
            match = _IDENT.match(text, pos + 1)
            return self.emit(MAP, pos, match.end() if match else pos + 1)
        for operator in _OPERATORS:
            if text.startswith(operator, pos):
                return self.punctuation(operator)
        self.error(f"unexpected character '{char}'")

    def punctuation(self, operator: str):
        if self.in_predicate:
            if operator in ("(", "["):
                self.nesting += 1
            elif operator in (")", "]"):
                self.nesting -= 1
            elif operator == "/" and self.nesting <= 0:
                self.emit(PRED_END, self.pos, self.pos + 1)
                self.in_predicate = False
                return
            elif operator in ("{", "}"):
                self.error("predicate never closed ('/' missing before the block)")
        else:
            if operator == "{":
                self.depth += 1
            elif operator == "}":
                self.depth -= 1
        self.emit(PUNCT, self.pos, self.pos + len(operator))

    # -- driver ----------------------------------------------------------
    def run(self) -> list[Token]:
        while True:
            self.skip_space_and_comments()
            if self.pos >= len(self.text):
                break
            if self.depth == 0 and not self.in_predicate:
                self.top_level()
            else:
                self.expression_token()
        if self.in_predicate:
            self.error("predicate never closed ('/' missing)")
        if self.depth > 0:
            self.error("block never closed ('}' missing)")
        self.emit(EOF, self.pos, self.pos)
        return self.tokens


def tokenize(text: str, path: str = "<script>") -> list[Token]:
    """Tokens of a whole script, ending with an EOF token.
    Raises ScriptSyntaxError with the position of the first problem."""
    return _Lexer(text, path).run()
