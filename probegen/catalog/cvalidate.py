"""What catalog strings that become C code may be, so that none puts other
code into generated files: an include is a relative path of plain names, the
clock one C expression of known tokens, and no string holds a control
character (nor a doc one that hides or reorders text).
"""

import re

from probegen.catalog.ctype import TokenCursor, is_identifier, is_type_name, shown, shown_char

# A relative path of names. No '.' or '..' component and no absolute path:
# the header includes what the build's include path holds, never a file
# chosen by climbing out of it (/dev/zero, /dev/stdin hang the compiler).
_INCLUDE = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*(?:/[A-Za-z0-9_+-][A-Za-z0-9_.+-]*)*")

# C's punctuators, longest first (as the compiler splits), and what starts a
# comment or a trigraph (named in errors).
_PUNCTUATORS = sorted("""
    ... <<= >>= %:%: -> ++ -- << >> <= >= == != && || *= /= %= += -= &= ^= |= ## <: :> <% %> %:
    /* // ?? [ ] ( ) { } . & * + - ~ ! / % < > ^ | ? : ; = , #
""".split(), key=len, reverse=True)
_TOKEN = re.compile(
    r"(?P<space> +)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    # C's preprocessing number: what a compiler reads as one token.
    r"|(?P<number>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.])*)"
    r"|(?P<punctuator>" + "|".join(map(re.escape, _PUNCTUATORS)) + ")"
    r"|(?P<other>.)", re.S
)
_INTEGER = re.compile(r"(?:0[xX][0-9a-fA-F]+|[0-9]+)(?:[uU](?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU]?)?")
_FLOAT = re.compile(r"(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFlL]?|[0-9]+[eE][+-]?[0-9]+[fFlL]?")
_BINARY = frozenset("* / % + - << >> < > <= >= == != & ^ | && ||".split())
_UNARY = frozenset("- + ! ~ * &".split())
_ARITHMETIC = frozenset("* / % + -".split())
_COMPARISONS = frozenset("< > <= >= == !=".split())
MAX_DEPTH = 32  # deeper nesting than any clock needs is refused, not recursed into

# Characters that hide or reorder text: C0 and C1 controls, DEL, line and paragraph separators,
# bidirectional overrides (code that reads differently from how it compiles) and lone surrogates
# (a file name's non-UTF-8 bytes). Outputs show them as escapes; docs may hold layout whitespace.
HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_HIDDEN_IN_DOCS = re.compile(HIDDEN.pattern + "(?<![\t\n\v\f\r\x85\u2028\u2029])")
# Keywords a cast's type may use.
_TYPE_WORDS = frozenset("const volatile signed unsigned char short int long void bool _Bool float double struct union "
                        "enum".split())


class CExpressionError(ValueError):
    """Text that is not an expression of the accepted grammar; says why."""


def include_problem(text: str) -> str | None:
    """Why ``text`` cannot be written as ``#include "text"``, or None."""
    if _INCLUDE.fullmatch(text):
        return None
    return (f"'{shown(text)}' is not an include path: write a relative path of names "
            "(letters, digits, '_', '-', '+', '.'; parts separated by '/'; no '.' or '..' part)")


def clock_expression(text: str) -> str:
    """The clock as the header writes it: ``text`` parsed as one C
    expression, each run of spaces made one."""
    tokens = _tokens(text)
    if not tokens:
        raise CExpressionError("empty expression")
    parser = _ExpressionParser(tokens)
    parser.conditional()
    if parser.peek() is not None:
        parser.fail(f"unexpected '{parser.peek()}'")
    # Spaced as written (the text is tokens and ' '): the compiler splits the result into these tokens.
    return " ".join(text.split())


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    for match in _TOKEN.finditer(text):
        if match["other"] is not None:
            raise CExpressionError(f"unexpected {shown_char(match['other'])}")
        token = match[0]
        if match["number"] and not (_INTEGER.fullmatch(token) or _FLOAT.fullmatch(token)):
            raise CExpressionError(f"'{token}' is not a C number")
        if match["name"] and not is_identifier(token) and token not in _TYPE_WORDS:
            raise CExpressionError(f"'{token}' is a keyword")
        if not match["space"]:
            tokens.append(token)
    return tokens


class _ExpressionParser(TokenCursor):
    """Recursive descent over the expressions a clock may be:

        conditional = binary [ "?" conditional ":" conditional ]
        binary      = unary { BINARY_OPERATOR unary }
        unary       = UNARY_OPERATOR unary | "(" type ")" unary | postfix
        postfix     = primary { "(" [ conditional { "," conditional } ] ")"
                                | "[" conditional "]" | "." NAME | "->" NAME }
        primary     = NAME | NUMBER | "(" conditional ")"

    Precedence does not matter here: the question is only whether the text
    is one expression, which the header then casts as a whole.
    """

    def fail(self, why: str):
        raise CExpressionError(why)

    def conditional(self) -> None:
        self.nested(self.binary)
        if self.peek() == "?":
            self.take()
            self.nested(self.conditional)
            self.expect(":")
            self.nested(self.conditional)

    def binary(self) -> None:
        self.unary()
        operators = []
        while self.peek() in _BINARY:
            operators.append(self.take())
            self.unary()
        # What gcc's -Wparentheses would warn of in every probe site: bit,
        # shift, logical or comparison operators mixed with others, or a
        # chained comparison. Only arithmetic mixes freely.
        others = [o for o in operators if o not in _ARITHMETIC]
        if others and (len(set(operators)) > 1 or others[0] in _COMPARISONS and len(operators) > 1):
            distinct = list(dict.fromkeys(operators))
            chained = "'" + "', '".join(distinct) + ("' are" if len(distinct) > 1 else "' is")
            self.fail(f"{chained} chained without parentheses: write them in (...) so that "
                      "the precedence is explicit (gcc -Wparentheses)")

    def unary(self) -> None:
        token = self.peek()
        length = 1 if token in _UNARY else token == "(" and self.cast_length()  # an operator or a cast's '(type)'
        if length:
            self.position += length
            self.nested(self.unary)
        else:
            self.postfix()

    def nested(self, parse) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(f"nested more than {MAX_DEPTH} deep")
        parse()
        self.depth -= 1

    def cast_length(self) -> int:
        """Tokens of a cast '(type)' starting here, or 0 if none."""
        depth = 0
        for index in range(self.position, len(self.tokens)):
            depth += {"(": 1, ")": -1}.get(self.tokens[index], 0)
            if depth == 0:
                inner = self.tokens[self.position + 1:index]
                following = self.tokens[index + 1] if index + 1 < len(self.tokens) else ""
                starts_operand = following in _UNARY or following[:1] in ("(", "_", ".") or following[:1].isalnum()
                return index + 1 - self.position if starts_operand and is_type_name(inner) else 0
        return 0

    def postfix(self) -> None:
        self.primary()
        while True:
            token = self.peek()
            if token in ("(", "["):  # a call's arguments, none or more; a subscript's one
                self.take()
                if token == "[" or self.peek() != ")":
                    self.conditional()
                    while token == "(" and self.peek() == ",":
                        self.take()
                        self.conditional()
                self.expect(")" if token == "(" else "]")
            elif token in (".", "->"):
                self.take()
                if not is_identifier(self.peek() or ""):
                    self.fail(f"expected a member name after '{token}'")
                self.take()
            else:
                return

    def primary(self) -> None:
        token = self.peek()
        if token is None:
            self.fail("expression ends early")
        if token == "(":
            self.take()
            self.conditional()
            self.expect(")")
        elif is_identifier(token) or _INTEGER.fullmatch(token) or _FLOAT.fullmatch(token):
            self.take()
        else:
            self.fail(f"unexpected '{token}'")


def text_problem(text: str, doc: bool) -> str | None:
    """Why ``text``, which holds an unprintable character, is refused, or
    None: docs may hold layout whitespace (outputs escape it)."""
    if not doc:
        char = next(c for c in text if not c.isprintable())
    elif match := _HIDDEN_IN_DOCS.search(text):
        char = match[0]
    else:
        return None
    where = "docs" if doc else "catalog strings other than docs"
    return f"character U+{ord(char):04X} is not allowed in {where}"
