"""Split a bpftrace script into tokens, each with its line and column.

bpftrace's top level is not context free: ``usdt:/opt/spdk/bin/nvmf_tgt:spdk:x`` holds slashes,
while a ``/`` after it opens a predicate. So at the top level whole attach points, C definitions
(``struct x { ... };``) and preprocessor lines are single tokens; inside predicates and blocks,
C-like expression tokens.
"""

import bisect
import re
from collections import namedtuple

from probegen.bpftrace import COMMENT
from probegen.errors import InputError, Location

ATTACH, CDEF, PREPROC = "attach point", "C definition", "preprocessor line"
PRED_START, PRED_END = "predicate start", "predicate end"
IDENT, VAR, POSITIONAL, MAP = "identifier", "variable", "positional", "map"  # also group names below
INT, STRING, PUNCT, EOF = "integer", "string", "punctuation", "end of file"

BINARY = frozenset("|| && | ^ & == != < > <= >= << >> + - * / %".split())
ASSIGNMENTS = frozenset("= += -= *= /= %= &= |= ^= <<= >>=".split())
# Longest first, so "<<=" wins over "<<" and "<".
_OPERATORS = sorted(BINARY | ASSIGNMENTS | {*"-> ++ -- ! ~ ? : ; , . ( ) [ ] { }".split()}, key=len, reverse=True)
_NAME = "[A-Za-z_][A-Za-z0-9_]*"
# A string is on one line; a backslash escapes any character, a newline too.
_EXPRESSION = re.compile(rf"(?P<{IDENT}>{_NAME})|(?P<{INT}>[0-9][0-9A-Za-z_]*)|(?P<{VAR}>\${_NAME})"
                         rf"|(?P<{POSITIONAL}>\$(?:[0-9]+|#))|(?P<{MAP}>@(?:{_NAME})?)"
                         rf'|(?P<{STRING}>"(?:[^"\\\n]|\\[\s\S])*")'
                         rf"|(?P<{PUNCT}>{'|'.join(map(re.escape, _OPERATORS))})")
# Why a character starts no token in an expression (or ends an attach point: '$' never does).
_NO_TOKEN = {'"': "string never closed", "$": "'$' must start a variable ($name) or a parameter ($1)"}
# Characters bpftrace 0.17 takes unquoted in an attach point (a path with '+', '?', '@', '=', '~'
# or '%' must be quoted).
_ATTACH = re.compile(r'(?:[A-Za-z0-9_\-.*:\[\]$]|/(?![/*])|"[^"]*")*')
_ATTACH_END = re.compile(r"\s|[,{]|//|/\*|\Z")
_C_DEFINITION_START = re.compile(r"(struct|union|enum|typedef)\b")
# After a definition's '}': "name;" of a typedef, or the plain ';' (or neither).
_DEFINITION_END = re.compile(r"(?:[A-Za-z_0-9 \t,*]*;)?")
_SPACE = re.compile(r"\s+")
# A preprocessor line, continued by a backslash at its end.
_PREPROCESSOR = re.compile(r"(?:[^\n]*\\\r?\n)*[^\n]*")
_BRACES = {"{": 1, "}": -1}
_BRACKETS = {"(": 1, "[": 1, ")": -1, "]": -1}


class ScriptSyntaxError(InputError):
    """A script that cannot be parsed ("cannot parse: ...")."""


def positions(text: str, line: int = 1, column: int = 1):
    """A function giving the (line, column) of an offset into ``text``, which starts at ``line``, ``column``."""
    newlines = [m.start() for m in re.finditer("\n", text)]

    def where(offset: int) -> tuple[int, int]:
        before = bisect.bisect_left(newlines, offset)
        return (line, column + offset) if before == 0 else (line + before, offset - newlines[before - 1])
    return where


Token = namedtuple("Token", "kind text line column")


class _Lexer:
    def __init__(self, text: str, path: str):
        self.text, self.path = text, path
        self.where = positions(text)
        self.pos = 0
        self.tokens: list[Token] = []
        self.in_predicate = False
        self.depth = 0  # braces open in a block, or brackets in a predicate; 0 at the top level

    def error(self, message: str, pos: int | None = None):
        where = self.where(self.pos if pos is None else pos)
        raise ScriptSyntaxError(f"cannot parse: {message}", Location(self.path, *where))

    def emit(self, kind: str, start: int, end: int):
        self.tokens.append(Token(kind, self.text[start:end], *self.where(start)))
        self.pos = end

    def skip_space_and_comments(self) -> int:
        """Where the next token starts (the text's length at its end)."""
        while skipped := _SPACE.match(self.text, self.pos) or COMMENT.match(self.text, self.pos):
            if skipped[0].startswith("/*") and not skipped[0].endswith("*/", 2):
                self.error("comment never closed ('*/' missing)")
            self.pos = skipped.end()
        return self.pos

    def c_definition(self):
        """Up to the closing brace and a ';', or the first ';'."""
        start, depth = self.pos, 0
        for pos in range(start, len(self.text)):
            char = self.text[pos]
            if char == ";" and depth == 0:
                return self.emit(CDEF, start, pos + 1)
            depth += _BRACES.get(char, 0)
            if char == "}" and depth == 0:
                return self.emit(CDEF, start, _DEFINITION_END.match(self.text, pos + 1).end())
        self.error("C definition never closed", start)

    def attach_point(self):  # up to whitespace, ',', '{' or a comment, quoted paths included
        end = _ATTACH.match(self.text, self.pos).end()
        if not _ATTACH_END.match(self.text, end):  # a quote never closed, or a character to quote
            self.error(_NO_TOKEN.get(self.text[end], f"unexpected '{self.text[end]}' in attach point; quote a path "
                                     f"that has it (usdt:\"/path\":provider:name)"), end)
        self.emit(ATTACH, self.pos, end)

    def top_level(self):
        text, pos = self.text, self.pos
        char = text[pos]
        if char == "#" and not text[text.rfind("\n", 0, pos) + 1:pos].strip():
            self.emit(PREPROC, pos, _PREPROCESSOR.match(text, pos).end())
        elif char in "{,/":  # a block opens, another attach point follows, a predicate opens
            self.emit(PRED_START if char == "/" else PUNCT, pos, pos + 1)
            self.depth, self.in_predicate = (1 if char == "{" else 0), char == "/"
        elif char == "}":
            self.error("'}' with no block open")
        elif _C_DEFINITION_START.match(text, pos):
            self.c_definition()
        else:
            self.attach_point()

    def expression_token(self):
        pos = self.pos
        match = _EXPRESSION.match(self.text, pos)
        if not match:
            self.error(_NO_TOKEN.get(self.text[pos], f"unexpected character '{self.text[pos]}'"))
        operator = match.group()  # only punctuation is a bracket or a '/'
        self.depth += (_BRACKETS if self.in_predicate else _BRACES).get(operator, 0)
        if self.in_predicate and operator == "/" and self.depth <= 0:
            self.in_predicate, self.depth = False, 0
            return self.emit(PRED_END, pos, pos + 1)
        if self.in_predicate and operator in ("{", "}"):
            self.error("predicate never closed ('/' missing before the block)")
        self.emit(match.lastgroup, pos, match.end())

    def run(self) -> list[Token]:
        while self.skip_space_and_comments() < len(self.text):
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


def tokenize(text: str, path: str) -> list[Token]:
    """A script's tokens, ending with an EOF token, or a ScriptSyntaxError at the first problem."""
    return _Lexer(text, path).run()
