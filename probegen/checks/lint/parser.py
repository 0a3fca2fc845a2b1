"""Recursive-descent parser for the bpftrace that scripts really use.

Covers probes with several attach points, predicates, C definitions and
preprocessor lines at the top, and in blocks: assignments to ``$vars`` and
``@maps``, calls, casts, ``->``/``.``/``[]``, the C operators, ``if``/
``else``, ``unroll``, ``while`` and ``return``. What it cannot read is a
``ScriptSyntaxError`` pointing at the token, never a guess.
"""

from __future__ import annotations

from contextlib import contextmanager

from probegen.checks.lint import lexer, syntax
from probegen.checks.lint.lexer import ScriptSyntaxError, Token

# Binary operators by precedence, loosest first (C's order).
_BINARY_LEVELS = (
    ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="),
    ("<", ">", "<=", ">="), ("<<", ">>"), ("+", "-"), ("*", "/", "%"),
)
_PRECEDENCE = {op: level for level, ops in enumerate(_BINARY_LEVELS) for op in ops}
_ASSIGNMENTS = ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=")
_UNARY = ("!", "~", "-", "+", "*", "&", "++", "--")
# Type names bpftrace accepts in casts besides struct/union/enum ones.
_CAST_TYPES = frozenset(
    [f"{s}int{w}" for s in ("", "u") for w in (8, 16, 32, 64)]
    + ["int", "char", "short", "long", "unsigned", "signed", "void", "bool"]
)
# Calls whose arguments are types, not expressions: skipped whole.
_TYPE_CALLS = frozenset(["sizeof", "offsetof"])


class _Parser:
    def __init__(self, tokens: list[Token], path: str):
        self.tokens = tokens
        self.index = 0
        self.path = path
        self.depth = 0  # blocks, parentheses and operands nested here

    def deeper(self):
        """One level deeper; bpftrace takes thousands, but a script nested
        beyond syntax.MAX_NESTING is refused at the token that goes too deep."""
        if self.depth >= syntax.MAX_NESTING:
            self.error(f"nesting too deep: more than {syntax.MAX_NESTING} levels of blocks, "
                       "parentheses or operators")
        self.depth += 1

    @contextmanager
    def nested(self):
        self.deeper()
        try:
            yield
        finally:
            self.depth -= 1

    # -- token helpers -----------------------------------------------------
    @property
    def token(self) -> Token:
        return self.tokens[self.index]

    def peek(self, ahead: int = 1) -> Token:
        return self.tokens[min(self.index + ahead, len(self.tokens) - 1)]

    def is_punct(self, *texts: str, token: Token | None = None) -> bool:
        token = token or self.token
        return token.kind == lexer.PUNCT and token.text in texts

    def advance(self) -> Token:
        token = self.token
        if token.kind != lexer.EOF:
            self.index += 1
        return token

    def error(self, message: str, token: Token | None = None):
        token = token or self.token
        raise ScriptSyntaxError(self.path, token.line, token.column, message)

    def expect(self, text: str, what: str = "") -> Token:
        if not self.is_punct(text):
            context = f" {what}" if what else ""
            self.error(f"expected '{text}'{context}, found {self.token.describe()}")
        return self.advance()

    # -- top level ---------------------------------------------------------
    def script(self) -> syntax.Script:
        script = syntax.Script(self.path)
        while self.token.kind != lexer.EOF:
            token = self.token
            if token.kind == lexer.PREPROC:
                script.preprocessor.append(self.advance().text)
            elif token.kind == lexer.CDEF:
                self.advance()
                if script.blocks:
                    self.error("C definitions must come before the first probe", token)
                script.definitions.append(syntax.CDefinition(token.line, token.column, token.text))
            elif token.kind == lexer.ATTACH:
                script.blocks.append(self.probe_block())
            else:
                self.error(f"expected a probe (such as usdt:PATH:NAME), found {token.describe()}")
        return script

    def probe_block(self) -> syntax.ProbeBlock:
        first = self.token
        points = [self.attach_point()]
        while self.is_punct(","):
            self.advance()
            points.append(self.attach_point())
        predicate = None
        if self.token.kind == lexer.PRED_START:
            self.advance()
            if self.token.kind == lexer.PRED_END:
                self.error("empty predicate")
            predicate = self.expression()
            if self.token.kind != lexer.PRED_END:
                self.error(f"expected '/' to close the predicate, found {self.token.describe()}")
            self.advance()
        if not self.is_punct("{"):
            self.error(f"expected '{{' to open the probe's block, found {self.token.describe()}")
        body = self.block()
        return syntax.ProbeBlock(first.line, first.column, tuple(points), predicate, body)

    def attach_point(self) -> syntax.AttachPoint:
        token = self.token
        if token.kind != lexer.ATTACH:
            self.error(f"expected an attach point, found {token.describe()}")
        self.advance()
        return syntax.AttachPoint(token.line, token.column, token.text)

    # -- statements --------------------------------------------------------
    def block(self) -> tuple:
        with self.nested():
            return self._block()

    def _block(self) -> tuple:
        self.expect("{")
        statements = []
        while not self.is_punct("}"):
            if self.token.kind == lexer.EOF:
                self.error("block never closed ('}' missing)")
            if self.is_punct(";"):  # empty statement
                self.advance()
                continue
            statement, needs_separator = self.statement()
            statements.append(statement)
            if self.is_punct(";"):
                self.advance()
            elif needs_separator and not self.is_punct("}"):
                self.error(f"expected ';' between statements, found {self.token.describe()}")
        self.expect("}")
        return tuple(statements)

    def statement(self):
        """A statement, and whether a ';' must follow it."""
        token = self.token
        if token.kind == lexer.IDENT and token.text == "if":
            return self.if_statement(), False
        if token.kind == lexer.IDENT and token.text in ("unroll", "while"):
            self.advance()
            self.expect("(", f"after '{token.text}'")
            condition = self.expression()
            self.expect(")")
            body = self.block()
            return syntax.Loop(token.line, token.column, token.text, condition, body), False
        if token.kind == lexer.IDENT and token.text in ("return", "break", "continue"):
            self.advance()
            return syntax.Jump(token.line, token.column, token.text), True
        expr = self.expression()
        if self.token.kind == lexer.PUNCT and self.token.text in _ASSIGNMENTS:
            op = self.advance().text
            if not isinstance(expr, (syntax.Var, syntax.Map)):
                self.error("only $variables and @maps can be assigned", token)
            value = self.expression()
            return syntax.Assign(token.line, token.column, expr, op, value), True
        return syntax.ExprStatement(token.line, token.column, expr), True

    def if_statement(self) -> syntax.If:
        # "else if" chains are read in a loop: a thousand branches are no
        # deeper than one.
        branches = []
        otherwise = ()
        while True:
            token = self.advance()
            self.expect("(", "after 'if'")
            condition = self.expression()
            self.expect(")")
            branches.append((token, condition, self.block()))
            if not (self.token.kind == lexer.IDENT and self.token.text == "else"):
                break
            self.advance()
            if not (self.token.kind == lexer.IDENT and self.token.text == "if"):
                otherwise = self.block()
                break
        for token, condition, then in reversed(branches):
            statement = syntax.If(token.line, token.column, condition, then, otherwise)
            otherwise = (statement,)
        return statement

    # -- expressions -------------------------------------------------------
    def expression(self):
        with self.nested():
            condition = self.binary()
            if self.is_punct("?"):
                token = self.advance()
                then = self.expression()
                self.expect(":", "in '?:'")
                otherwise = self.expression()
                return syntax.Ternary(token.line, token.column, condition, then, otherwise)
            return condition

    def binary(self):
        """Operands joined by binary operators, by precedence climbing on
        explicit stacks: a 1,000-term sum costs no recursion. Builds the
        tree C's grammar does (left-associative)."""
        operands = [self.unary()]
        operators: list[Token] = []

        def reduce():
            op = operators.pop()
            right = operands.pop()
            operands.append(syntax.Binary(op.line, op.column, op.text, operands.pop(), right))

        while self.token.kind == lexer.PUNCT and self.token.text in _PRECEDENCE:
            token = self.advance()
            level = _PRECEDENCE[token.text]
            while operators and _PRECEDENCE[operators[-1].text] >= level:
                reduce()
            operators.append(token)
            operands.append(self.unary())
        while operators:
            reduce()
        return operands[0]

    def unary(self):
        token = self.token
        if self.is_punct(*_UNARY):
            self.advance()
            with self.nested():
                return syntax.Unary(token.line, token.column, token.text, self.unary())
        if self.is_punct("(") and self.cast_ahead():
            with self.nested():
                return self.cast()
        return self.postfix(self.primary())

    def cast_ahead(self) -> bool:
        """Whether the '(' here opens a cast: '(struct x *)', '(uint32)',
        or '(name *)' (a typedef, since '(x *)' is no expression)."""
        first = self.peek()
        if first.kind != lexer.IDENT:
            return False
        if first.text in ("struct", "union", "enum") or first.text in _CAST_TYPES:
            return True
        ahead = 2
        while self.is_punct("*", token=self.peek(ahead)):
            ahead += 1
        return ahead > 2 and self.is_punct(")", token=self.peek(ahead))

    def cast(self):
        open_paren = self.advance()
        words, stars, array = [], 0, ""
        while not self.is_punct(")"):
            token = self.token
            if token.kind == lexer.IDENT and not stars:
                words.append(self.advance().text)
            elif self.is_punct("*"):
                self.advance()
                stars += 1
            elif self.is_punct("["):  # (uint8[16])
                self.advance()
                size = self.advance()
                self.expect("]")
                array = f"[{size.text}]"
            else:
                self.error(f"unexpected {token.describe()} in a cast")
        self.advance()
        struct_name = None
        if len(words) == 2 and words[0] in ("struct", "union"):
            struct_name = words[1]
        type_text = " ".join(words) + (" " + "*" * stars if stars else "") + array
        operand = self.unary()
        return syntax.Cast(open_paren.line, open_paren.column, type_text, struct_name, stars > 0, operand)

    def primary(self):
        token = self.token
        kind = token.kind
        if kind == lexer.INT:
            self.advance()
            return syntax.Int(token.line, token.column, token.text)
        if kind == lexer.STRING:
            self.advance()
            return syntax.Str(token.line, token.column, token.text[1:-1])
        if kind == lexer.VAR:
            self.advance()
            return syntax.Var(token.line, token.column, token.text)
        if kind == lexer.POSITIONAL:
            self.advance()
            return syntax.Positional(token.line, token.column, token.text)
        if kind == lexer.MAP:
            self.advance()
            keys = ()
            if self.is_punct("["):
                self.advance()
                keys = self.expression_list("]")
            return syntax.Map(token.line, token.column, token.text, keys)
        if kind == lexer.IDENT:
            self.advance()
            if self.is_punct("(") and token.text in _TYPE_CALLS:
                return self.opaque_call(token)
            if self.is_punct("("):
                self.advance()
                args = self.expression_list(")")
                return syntax.Call(token.line, token.column, token.text, args)
            return syntax.Ident(token.line, token.column, token.text)
        if self.is_punct("("):
            self.advance()
            items = self.expression_list(")")
            if len(items) == 1:
                return items[0]
            return syntax.Tuple(token.line, token.column, items)
        self.error(f"expected an expression, found {token.describe()}")

    def opaque_call(self, name: Token):
        depth = 0
        while True:
            token = self.advance()
            if token.kind == lexer.EOF:
                self.error(f"'(' after '{name.text}' never closed", name)
            if self.is_punct("(", token=token):
                depth += 1
            elif self.is_punct(")", token=token):
                depth -= 1
                if depth == 0:
                    return syntax.Opaque(name.line, name.column, name.text)

    def expression_list(self, close: str) -> tuple:
        items = []
        while not self.is_punct(close):
            items.append(self.expression())
            if not self.is_punct(close):
                self.expect(",", "or '" + close + "'")
        self.advance()
        return tuple(items)

    def postfix(self, expr):
        # Each '->', '.', '[]' or '++' wraps the expression once more, and
        # the checker follows that chain by recursion: it counts as nesting.
        outer = self.depth
        try:
            while self.is_punct("->", ".", "[", "++", "--"):
                self.deeper()
                if self.is_punct("->", "."):
                    arrow = self.advance().text == "->"
                    name = self.token
                    if name.kind != lexer.IDENT:
                        self.error(f"expected a member name, found {name.describe()}")
                    self.advance()
                    expr = syntax.Member(name.line, name.column, expr, name.text, arrow)
                elif self.is_punct("["):
                    token = self.advance()
                    index = self.expression()
                    self.expect("]")
                    expr = syntax.Index(token.line, token.column, expr, index)
                else:
                    token = self.advance()
                    expr = syntax.Unary(token.line, token.column, "post" + token.text, expr)
            return expr
        finally:
            self.depth = outer


def parse(text: str, path: str = "<script>") -> syntax.Script:
    """The script's AST. Raises ScriptSyntaxError (an InputError)."""
    tokens = lexer.tokenize(text, path)
    with syntax.room_for_nesting():
        return _Parser(tokens, path).script()
