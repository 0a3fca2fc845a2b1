"""A recursive-descent parser of the bpftrace scripts use, into an AST of
what the checker reads. What it cannot read is a ``ScriptSyntaxError`` at
the token, never a guess.
"""

import sys
from collections import namedtuple
from contextlib import contextmanager

from probegen.catalog.ctype import integer_type, parse_ctype
from probegen.errors import Location
from probegen.checks.lint import lexer
from probegen.checks.lint.lexer import ScriptSyntaxError, Token

# Blocks, parentheses and operators nested in one another, at most: the parser and the checker
# recurse on them (real scripts nest a handful), spending at most _FRAMES_PER_LEVEL frames a level.
MAX_NESTING = 500
_FRAMES_PER_LEVEL = 8
_UNARY = ("!", "~", "-", "+", "*", "&", "++", "--")
# bpftrace's integer types in casts, as C types; and the type names casts start with.
CAST_INTEGERS = {f"{'' if signed else 'u'}int{size * 8}": parse_ctype(integer_type(size, signed))
                 for signed in (True, False) for size in (1, 2, 4, 8)}
_CAST_TYPES = frozenset([*CAST_INTEGERS, "struct", "union", "enum", "int", "char", "short", "long", "unsigned",
                         "signed", "void", "bool"])
# Calls whose arguments are types, not expressions: skipped whole.
_TYPE_CALLS = frozenset(["sizeof", "offsetof"])
_OPERANDS = (lexer.INT, lexer.POSITIONAL, lexer.STRING, lexer.VAR, lexer.MAP, lexer.IDENT)


# Expressions whose value can be known know where they start, 1-based (a Member: where its name is).
Name = namedtuple("Name", "line column name")  # a builtin (arg1, pid, comm), or a $variable (with its '$')
Str = namedtuple("Str", "line column raw")  # raw: between the quotes, escapes as written
Call = namedtuple("Call", "line column name args")
Cast = namedtuple("Cast", "line column type_text struct_name operand")  # struct_name: x in "(struct x *)"
Member = namedtuple("Member", "line column base name")  # base->name or base.name
Map = namedtuple("Map", "parts")  # parts: the keys
# Numbers, operators, indexing, tuples, sizeof, return: only their parts are checked.
Other = namedtuple("Other", "parts", defaults=((),))
Assign = namedtuple("Assign", "target op value")  # target: a $variable or a Map; op: "=", "+=", ...
# branches: (condition, statements) of the if, each "else if" and the else (condition
# None; empty if there is none). A loop (unroll, while) is an If of one branch.
If = namedtuple("If", "branches")
ProbeBlock = namedtuple("ProbeBlock", "attach_points predicate body")  # attach points: Tokens
Script = namedtuple("Script", "path blocks definitions preprocessor")  # definitions: Tokens


def _shown(token: Token) -> str:
    return token.kind if token.kind == lexer.EOF else f"'{token.text}'"


def start(node) -> tuple[int, int]:
    """Where an expression starts (one whose value can be known: an Other has no position)."""
    while isinstance(node, Member):
        node = node.base
    return node.line, node.column


@contextmanager
def room_for_nesting():
    """Python's recursion limit raised, for this call, to what walking a script nested
    MAX_NESTING deep takes (since Python 3.11 such calls do not grow the C stack)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, MAX_NESTING * _FRAMES_PER_LEVEL + 1000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


class _Parser:
    def __init__(self, tokens: list[Token], path: str):
        self.tokens, self.path = tokens, path
        self.index = 0
        self.depth = 0  # blocks, parentheses and operands nested here

    def deeper(self):
        if self.depth >= MAX_NESTING:
            self.error(f"nesting too deep: more than {MAX_NESTING} levels of blocks, parentheses or operators")
        self.depth += 1

    @contextmanager
    def nested(self):
        self.deeper()
        yield
        self.depth -= 1  # not on an error: it ends the parse

    @property
    def token(self) -> Token:
        return self.tokens[self.index]

    def is_punct(self, *texts: str, token: Token | None = None) -> bool:
        token = token or self.token
        return token.kind == lexer.PUNCT and token.text in texts

    def is_word(self, *words: str) -> bool:
        return self.token.kind == lexer.IDENT and self.token.text in words

    def advance(self) -> Token:
        token = self.token
        if token.kind != lexer.EOF:
            self.index += 1
        return token

    def error(self, message: str, token: Token | None = None):
        token = token or self.token
        raise ScriptSyntaxError(f"cannot parse: {message}", Location(self.path, token.line, token.column))

    def expect(self, text: str | None, what: str = "", kind: str = lexer.PUNCT) -> Token:
        """The token here if it is of ``kind`` and reads ``text`` (None: any), else the error
        "expected WHAT, found ..." (``what``; by default the text in quotes, as repr() puts punctuation)."""
        if self.token.kind != kind or text not in (None, self.token.text):
            self.error(f"expected {what or repr(text)}, found {_shown(self.token)}")
        return self.advance()

    def script(self) -> Script:
        script = Script(self.path, [], [], [])
        while self.token.kind != lexer.EOF:
            token = self.token
            if token.kind == lexer.PREPROC:
                script.preprocessor.append(self.advance().text)
            elif token.kind == lexer.CDEF:
                if script.blocks:
                    self.error("C definitions must come before the first probe")
                script.definitions.append(self.advance())
            elif token.kind == lexer.ATTACH:
                script.blocks.append(self.probe_block())
            else:
                self.error(f"expected a probe (such as usdt:PATH:NAME), found {_shown(token)}")
        return script

    def probe_block(self) -> ProbeBlock:
        points = [self.advance()]  # script() saw it is an attach point
        while self.is_punct(","):
            self.advance()
            points.append(self.expect(None, "an attach point", lexer.ATTACH))
        predicate = None
        if self.token.kind == lexer.PRED_START:
            self.advance()
            if self.token.kind == lexer.PRED_END:
                self.error("empty predicate")
            predicate = self.expression()
            self.expect("/", "'/' to close the predicate", lexer.PRED_END)
        return ProbeBlock(tuple(points), predicate, self.block("'{' to open the probe's block"))

    def block(self, what: str = "") -> tuple:
        with self.nested():
            self.expect("{", what)
            statements = []
            while not self.is_punct("}"):  # the lexer saw it closed
                if not self.is_punct(";"):  # else an empty statement
                    statements.append(self.statement())
                    if not (self.is_punct(";", "}") or isinstance(statements[-1], If)):  # an if, a loop: no ';'
                        self.error(f"expected ';' between statements, found {_shown(self.token)}")
                if self.is_punct(";"):
                    self.advance()
            self.expect("}")
            return tuple(statements)

    def statement(self):
        token = self.token
        if self.is_word("if", "unroll", "while"):
            return self.branches()
        if self.is_word("return", "break", "continue"):
            self.advance()
            return Other()
        expr = self.expression()
        if self.token.kind == lexer.PUNCT and self.token.text in lexer.ASSIGNMENTS:
            op = self.advance().text
            if not (isinstance(expr, Map) or isinstance(expr, Name) and expr.name.startswith("$")):
                self.error("only $variables and @maps can be assigned", token)
            return Assign(expr, op, self.expression())
        return expr

    def branches(self) -> If:
        """A loop, or an if and its "else if"s, read in a loop: a thousand branches are no deeper than one."""
        branches = []
        while True:
            keyword = self.advance().text
            self.expect("(", f"'(' after '{keyword}'")
            condition = self.expression()
            self.expect(")")
            branches.append((condition, self.block()))
            if keyword != "if" or not self.is_word("else"):
                return If((*branches, (None, ())))
            self.advance()
            if not self.is_word("if"):
                return If((*branches, (None, self.block())))

    def expression(self):
        with self.nested():
            condition = self.binary()
            if not self.is_punct("?"):
                return condition
            self.advance()
            then = self.expression()
            self.expect(":", "':' in '?:'")
            return Other((condition, then, self.expression()))

    def binary(self):
        """Operands of binary operators side by side, whatever C's precedence
        (their value is not known), read in a loop: a 1,000-term sum costs no recursion."""
        operands = [self.unary()]
        while self.token.kind == lexer.PUNCT and self.token.text in lexer.BINARY:
            self.advance()
            operands.append(self.unary())
        return operands[0] if len(operands) == 1 else Other(tuple(operands))

    def unary(self):
        if self.is_punct(*_UNARY):
            self.advance()
            with self.nested():
                return Other((self.unary(),))
        if self.is_punct("(") and self.cast_ahead():
            with self.nested():
                return self.cast()
        return self.postfix(self.primary())

    def cast_ahead(self) -> bool:
        """Whether the '(' here opens a cast: '(struct x *)', '(uint32)',
        or '(name *)' (a typedef, since '(x *)' is no expression)."""
        first = self.tokens[self.index + 1]  # '(' is never the last token: EOF is
        if first.kind != lexer.IDENT:
            return False
        if first.text in _CAST_TYPES:
            return True
        ahead = 2
        while self.is_punct("*", token=self.tokens[self.index + ahead]):  # nor '*'
            ahead += 1
        return ahead > 2 and self.is_punct(")", token=self.tokens[self.index + ahead])

    def cast(self) -> Cast:
        open_paren = self.advance()
        words, stars, array = [], 0, ""
        while not self.is_punct(")"):
            if self.token.kind == lexer.IDENT and not stars:
                words.append(self.advance().text)
            elif self.is_punct("*"):
                self.advance()
                stars += 1
            elif self.is_punct("["):  # (uint8[16])
                self.advance()
                array = f"[{self.advance().text}]"
                self.expect("]")
            else:
                self.error(f"unexpected {_shown(self.token)} in a cast")
        self.advance()
        struct_name = words[1] if stars and len(words) == 2 and words[0] in ("struct", "union") else None
        type_text = " ".join(words) + (" " + "*" * stars if stars else "") + array
        return Cast(open_paren.line, open_paren.column, type_text, struct_name, self.unary())

    def primary(self):
        token = self.token
        if self.is_punct("("):
            items = self.expression_list(")")
            return items[0] if len(items) == 1 else Other(items)
        if token.kind not in _OPERANDS:
            self.error(f"expected an expression, found {_shown(token)}")
        self.advance()
        if token.kind == lexer.STRING:
            return Str(token.line, token.column, token.text[1:-1])
        if token.kind == lexer.MAP:
            return Map(self.expression_list("]") if self.is_punct("[") else ())
        if token.kind not in (lexer.IDENT, lexer.VAR):  # a number or a positional parameter
            return Other()
        if token.kind == lexer.VAR or not self.is_punct("("):
            return Name(token.line, token.column, token.text)
        if token.text in _TYPE_CALLS:
            return self.type_call(token)
        return Call(token.line, token.column, token.text, self.expression_list(")"))

    def type_call(self, name: Token) -> Other:
        depth = 0  # the first token is the '(' after the name
        while (token := self.advance()).kind != lexer.EOF:
            depth += {"(": 1, ")": -1}.get(token.text, 0)  # only punctuation reads '(' or ')'
            if depth == 0:
                return Other()
        self.error(f"'(' after '{name.text}' never closed", name)

    def expression_list(self, close: str) -> tuple:
        self.advance()
        items = []
        while not self.is_punct(close):
            items.append(self.expression())
            if not self.is_punct(close):
                self.expect(",", f"',' or '{close}'")
        self.advance()
        return tuple(items)

    def postfix(self, expr):
        # Each '->', '.', '[]' or '++' wraps the expression once more, and
        # the checker follows that chain by recursion: it counts as nesting.
        outer = self.depth
        while self.is_punct("->", ".", "[", "++", "--"):
            self.deeper()
            token = self.advance()
            if token.text in ("->", "."):
                name = self.expect(None, "a member name", lexer.IDENT)
                expr = Member(name.line, name.column, expr, name.text)
            elif token.text == "[":
                expr = Other((expr, self.expression()))
                self.expect("]")
            else:
                expr = Other((expr,))
        self.depth = outer
        return expr


def parse(text: str, path: str = "<script>") -> Script:
    return _Parser(lexer.tokenize(text, path), path).script()
