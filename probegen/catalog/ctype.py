"""The C types of probe arguments: the catalog's types parsed, and their
facts (kind, size and sign, as a ``.note.stapsdt`` spec records them), which
each output maps to its own syntax. Sizes are LP64's; ``pointer_size=4``
gives ILP32's.
"""

import dataclasses
import enum
import re
from dataclasses import dataclass

C_KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern
    float for goto if inline int long register restrict return short signed
    sizeof static struct switch typedef union unsigned void volatile while
    _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn
    _Static_assert _Thread_local bool true false alignas alignof asm class
    constexpr decltype delete explicit export friend mutable namespace new
    noexcept nullptr operator private protected public static_assert template
    this thread_local throw try typeid typename using virtual wchar_t""".split()
)


def is_identifier(name: str) -> bool:
    """A C identifier ([A-Za-z_][A-Za-z0-9_]*: for ASCII, Python's) that is no C or C++ keyword."""
    return name.isascii() and name.isidentifier() and name not in C_KEYWORDS


class Kind(enum.Enum):
    INTEGER = "integer"
    BOOL = "bool"
    ENUM = "enum"
    STRING = "string"  # char pointers: scripts read them with str()
    POINTER = "pointer"
    FUNCTION_POINTER = "function pointer"
    FLOAT = "floating-point"  # only in headers made from .d files (floating_type): no catalog holds one


# (size on LP64, signed, follows the pointer size) -> the integer types with
# them, as glibc defines the typedefs. Plain char's sign is the target's
# choice (signed on x86, unsigned on aarch64): None, either sign is right.
_INTEGER_GROUPS = {
    (1, None, False): "char",
    (1, True, False): "signed char, int8_t, int_least8_t, int_fast8_t",
    (1, False, False): "unsigned char, uint8_t, uint_least8_t, uint_fast8_t, u_int8_t, u_char",
    (2, True, False): "short, int16_t, int_least16_t",
    (2, False, False): "unsigned short, uint16_t, uint_least16_t, u_int16_t, u_short, in_port_t",
    (4, True, False): "int, int32_t, int_least32_t, pid_t, key_t, sig_atomic_t, wchar_t",
    (4, False, False): "unsigned int, uint32_t, uint_least32_t, uid_t, gid_t, u_int32_t, u_int, useconds_t, mode_t, "
                       "id_t, socklen_t, in_addr_t",
    (8, True, True): "long, ssize_t, intptr_t, ptrdiff_t, int_fast16_t, int_fast32_t, time_t, clock_t, suseconds_t",
    (8, False, True): "unsigned long, size_t, uintptr_t, uint_fast16_t, uint_fast32_t, u_long, ino_t, nlink_t",
    (8, True, False): "long long, int64_t, off_t, intmax_t, int_least64_t, int_fast64_t, off64_t, loff_t",
    (8, False, False): "unsigned long long, uint64_t, uintmax_t, uint_least64_t, uint_fast64_t, u_int64_t, dev_t",
}
_INTEGERS = {name: facts for facts, names in _INTEGER_GROUPS.items() for name in names.split(", ")}
_QUALIFIERS = ("const", "volatile", "restrict")
_FUNCTION_POINTER = re.compile(r"^(?P<ret>.+?)\(\s*\*(?P<qualifiers>[a-z ]*)\)\s*\((?P<params>.*)\)$")


def integer_type(size: int, signed: bool) -> str:
    """The <stdint.h> name of the integer type of this size and sign ("uint64_t")."""
    return f"{'' if signed else 'u'}int{8 * size}_t"


INT32_MIN, INT32_MAX, UINT32_MAX = -(2**31), 2**31 - 1, 2**32 - 1


def enum_size(values) -> int:
    """sizeof an enum with these values, as C compilers make it."""
    values = list(values)
    return 4 if all(INT32_MIN <= v <= INT32_MAX for v in values) or all(0 <= v <= UINT32_MAX for v in values) else 8


def align_up(value: int, align: int) -> int:
    return (value + align - 1) // align * align


def bit_start(bit: int, unit: int, width: int) -> int:
    """Where SysV puts a bitfield of ``width`` bits, of a type ``unit`` bits wide, at ``bit`` or
    after: at the next unit if it would cross one, or has no bits."""
    crosses = bit // unit != (bit + width - 1) // unit
    return align_up(bit, unit) if crosses or not width else bit


class CTypeError(ValueError):
    """A type the catalog cannot use; the message says why and what to write."""


@dataclass(frozen=True)
class CType:
    """A probe argument's C type. ``spelling``: as generated C writes it.
    ``signed``: None where either sign is right (plain char, enums)."""

    spelling: str
    kind: Kind
    size: int
    signed: bool | None
    pointer_sized: bool = False
    enum_name: str | None = None
    struct_name: str | None = None  # "spdk_nvmf_qpair" for struct spdk_nvmf_qpair *
    alias: str | None = None  # the catalog's typedef name, if written as one

    @property
    def name(self) -> str:
        """The type as the catalog wrote it (a typedef name, or the C type)."""
        return self.alias or self.spelling

    @property
    def pointee(self) -> str | None:
        """"struct NAME" or "union NAME" that scripts cast the pointer to."""
        if self.struct_name is None:
            return None
        return f"{'union' if 'union' in self.spelling.split() else 'struct'} {self.struct_name}"

    def size_on(self, pointer_size: int = 8) -> int:
        return pointer_size if self.pointer_sized else self.size

    def matches_note(self, size: int, signed: bool, pointer_size: int = 8) -> bool:
        """Whether a note argument of this size and sign carries this type."""
        return size == self.size_on(pointer_size) and self.signed in (None, signed)

    def carries(self, size: int, signed: bool, pointer_size: int = 8) -> bool:
        """Whether a note argument of this size and sign passes this type: it matches, or is
        a narrower integer that converts without loss (uint8_t to int; signed only to signed)."""
        return self.matches_note(size, signed, pointer_size) or (
            self.kind is Kind.INTEGER and size < self.size_on(pointer_size)
            and (not signed or self.signed is not False))

    def holds_constant(self, value: int, pointer_size: int = 8) -> bool:
        """Whether a literal in a note (whose size and sign are the literal's
        own: 'false' is '-4@$0') is a value of this type. An unsigned type
        also takes a negative literal C converts without loss (-1)."""
        if self.kind is Kind.BOOL:
            return value in (0, 1)
        bits = 8 * self.size_on(pointer_size)
        return -(1 << (bits - 1)) <= value < 1 << (bits - 1 if self.signed is True else bits)

    @property
    def is_integer_like(self) -> bool:
        return self.kind in (Kind.INTEGER, Kind.BOOL, Kind.ENUM)

    @property
    def is_address(self) -> bool:
        return self.kind in (Kind.POINTER, Kind.FUNCTION_POINTER)

    @property
    def signed_on_x86(self) -> bool:
        """The sign on x86_64, where scripts run (plain char is signed)."""
        return self.signed is not False

    def declare(self, name: str) -> str:  # of a variable of this type
        match = "(" in self.spelling and _FUNCTION_POINTER.match(self.spelling)
        if match:
            qualifiers = " ".join(match["qualifiers"].split() + [name])  # void (*const cb)(int)
            return f"{match['ret'].rstrip()} (*{qualifiers})({match['params']})"
        return self.spelling + ("" if self.spelling.endswith("*") else " ") + name


def _normalise(tokens: list[str]) -> str:
    """Type tokens as generated C spells them ('const char *', 'void( *)(int)'):
    whether a space goes between two tokens depends on the two alone."""
    text = tokens[0]
    for before, token in zip(tokens, tokens[1:]):
        if token == "*":
            spaced = before != "*"
        elif token in ("(", "["):
            spaced = before == ","
        else:
            spaced = token not in (",", ")", "]") and before not in ("(", "[")
        text += " " + token if spaced else token
    return text


# The tokens a type may be written with; any other character is an error.
_TYPE_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|\.\.\.|[*()\[\],])| +|(.)", re.S)
_INTEGER_WORDS = frozenset(("signed", "unsigned", "char", "short", "int", "long"))
_OTHER_TYPE_WORDS = frozenset(("void", "bool", "_Bool", "float", "double"))
_MAX_NESTING = 8  # function pointers taking function pointers...


def _type_tokens(text: str) -> list[str]:
    tokens = []
    for match in _TYPE_TOKEN.finditer(text):
        if match[2] is not None:
            raise CTypeError(f"unexpected {shown_char(match[2])} in type '{shown(text)}'")
        if match[1]:
            tokens.append(match[1])
    return tokens


def shown_char(char: str) -> str:
    return f"'{char}'" if char.isprintable() else f"character U+{ord(char):04X}"


def shown(text: str) -> str:
    """Catalog text for a message: what a terminal would act on, escaped."""
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


class TokenCursor:
    """The readers of types (here) and of the clock (catalog.cvalidate)
    walk their tokens with it; each has its own fail()."""

    def __init__(self, tokens: list[str]):
        self.tokens = tokens
        self.position = 0
        self.depth = 0

    def peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self) -> str:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def expect(self, token: str) -> None:
        if (found := self.peek()) != token:
            self.fail(f"expected '{token}'" + (f" before '{found}'" if found else " at the end"))
        self.take()


class _TypeParser(TokenCursor):
    """Recursive descent over the types a probe argument can have:

        type        = specifiers pointer* [ "(" "*" qualifier* ")" "(" params ")" ]
        params      = [ "void" | param { "," param } [ "," "..." ] ]
        param       = specifiers pointer* [ NAME | "(" "*" qualifier* [NAME] ")" "(" params ")" ]
        specifiers  = { qualifier } (integer words | void | bool | _Bool | float | [long] double
                      | struct NAME | union NAME | enum NAME | TYPEDEF_NAME) { qualifier }
        pointer     = "*" qualifier*

    Generated files spell the type with the tokens it kept: nothing else
    of the catalog's text (no parameter names).
    """

    def __init__(self, tokens: list[str], text: str):
        super().__init__(tokens)
        self.text = text
        self.kept: list[str] = []

    def fail(self, why: str):
        raise CTypeError(f"cannot read '{shown(self.text)}' as a C type: {why}")

    def take(self) -> str:
        self.kept.append(super().take())
        return self.kept[-1]

    def type_name(self) -> tuple[list[str], int, bool, list[str]]:
        """(specifiers but qualifiers, ["struct", "s"]; pointer levels (of a
        function pointer's return); whether a function pointer; tokens kept)."""
        words, stars, function = self.declaration(named=False)
        if self.peek() is not None:
            self.fail(f"unexpected '{self.peek()}'" + (
                "; function pointers are written 'ret (*)(params)'" if self.peek() in "()" else ""))
        return words, stars, function, self.kept

    def declaration(self, named: bool) -> tuple[list[str], int, bool]:
        """A type, or (``named``) a parameter: its name is no part of the type."""
        words = self.specifiers()
        stars = self.pointers()
        function = self.peek() == "("
        if function:
            self.function_declarator(named)
        elif named:
            if words == ["void"] and not stars:
                self.fail("'void' must be the only parameter")
            if is_identifier(self.peek() or ""):
                self.position += 1  # the parameter's name
        return words, stars, function

    def specifiers(self) -> list[str]:
        words: list[str] = []
        while (token := self.peek()) is not None:
            if token in _QUALIFIERS:
                self.take()
            elif token in _INTEGER_WORDS and (not words or words[-1] in _INTEGER_WORDS):  # all of them are, then
                words.append(self.take())
            elif sorted((*words, token)) == ["double", "long"]:  # long double, double long
                self.take()
                words = ["long", "double"]
            elif words:
                break  # a parameter's name, or what follows the type
            elif token in ("struct", "union", "enum"):
                words.append(self.take())
                if not is_identifier(self.peek() or ""):
                    self.fail(f"expected a name after '{token}'")
                words.append(self.take())
            elif token in _OTHER_TYPE_WORDS or is_identifier(token):
                words.append(self.take())
            else:
                break
        if not words:
            found = self.peek()
            self.fail("expected a type" + (f", found '{found}'" if found else ""))
        if _INTEGER_WORDS.issuperset(words) and _integer_name(words) is None:
            self.fail(f"'{' '.join(words)}' is not a C integer type")
        return words

    def pointers(self) -> int:
        stars = 0
        while self.peek() == "*":
            self.take()
            stars += 1
            while self.peek() in _QUALIFIERS:
                self.take()
        return stars

    def function_declarator(self, named: bool) -> None:
        self.depth += 1
        if self.depth > _MAX_NESTING:
            self.fail(f"function pointers nested more than {_MAX_NESTING} deep")
        self.expect("(")
        self.expect("*")
        while self.peek() in _QUALIFIERS:
            self.take()
        if named and is_identifier(self.peek() or ""):
            self.position += 1  # the parameter's name: not part of the type
        self.expect(")")
        self.expect("(")
        self.parameters()
        self.expect(")")
        self.depth -= 1

    def parameters(self) -> None:
        if self.tokens[self.position:self.position + 2] == ["void", ")"]:
            self.take()
        if self.peek() == ")":
            return
        while True:
            if self.peek() == "...":
                if self.kept[-1] != ",":  # the declarator's "(" at least is kept
                    self.fail("'...' needs a parameter before it")
                self.take()
                return
            self.declaration(named=True)
            if self.peek() != ",":
                return
            self.take()


def is_type_name(tokens: list[str]) -> bool:
    """Whether the tokens are one type of the grammar (a cast's type)."""
    try:
        _TypeParser(tokens, " ".join(tokens)).type_name()
    except CTypeError:
        return False
    return True


def parse_ctype(text: str, typedefs: dict[str, CType] | None = None) -> CType:
    """Parse a C type as the catalog writes it; ``typedefs``: the catalog's.
    Raises ``CTypeError`` for anything a probe argument cannot be."""
    tokens = _type_tokens(text)
    if not tokens:
        raise CTypeError("empty type")
    if "[" in tokens:
        raise CTypeError(
            f"array type '{_normalise(tokens)}': arrays decay to pointers at the call; "
            "write 'const char *' for a char array, or a pointer type"
        )
    words, stars, function, kept = _TypeParser(tokens, text).type_name()
    # Generated C spells _Bool as bool (from <stdbool.h>): the header must compile as C++ too.
    spelling = _normalise(["bool" if token == "_Bool" else token for token in kept])
    base = _integer_name(words) if _INTEGER_WORDS.issuperset(words) else " ".join(words)
    if function:
        return CType(spelling, Kind.FUNCTION_POINTER, 8, False, pointer_sized=True)
    if stars:
        if base in ("char", "signed char", "unsigned char") and stars == 1:
            return CType(spelling, Kind.STRING, 8, False, pointer_sized=True)
        struct_name = words[1] if stars == 1 and words[0] in ("struct", "union") else None
        return CType(spelling, Kind.POINTER, 8, False, pointer_sized=True, struct_name=struct_name)
    if base in _INTEGERS:
        size, signed, pointer_sized = _INTEGERS[base]
        return CType(spelling, Kind.INTEGER, size, signed, pointer_sized)
    if base in ("bool", "_Bool"):
        return CType(spelling, Kind.BOOL, 1, False)
    if words[0] == "enum":
        return CType(spelling, Kind.ENUM, 4, None, enum_name=words[1])
    if base in (typedefs or {}):
        # Generated C spells the target type, so call sites need not see
        # the typedef; ``alias`` keeps the name for docs.
        return dataclasses.replace(typedefs[base], alias=base)
    if base in ("float", "double", "long double"):
        raise CTypeError(f"floating-point type '{spelling}' is not supported: "
                         "bpftrace and BCC cannot read floating-point USDT arguments")
    if words[0] in ("struct", "union"):
        raise CTypeError(f"'{spelling}' passed by value is not supported: a probe argument "
                         f"is one register or memory word; pass '{spelling} *'")
    if base == "void":
        raise CTypeError(f"unsupported type '{spelling}'")
    raise CTypeError(f"unknown type '{spelling}': declare it under 'typedefs:' "
                     f"(for example '{spelling}: \"void (*)(void *)\"')")


# The integer keywords but the sign, sorted -> the _INTEGERS name they make.
_INTEGER_WORDS_MAKE = {"": "int", "int": "int", "char": "char", "short": "short", "int short": "short",
                       "long": "long", "int long": "long", "long long": "long long", "int long long": "long long"}


def _integer_name(words: list[str]) -> str | None:
    """The _INTEGERS name of integer keywords in any order ('signed' goes
    without saying but for char), or None if they make no C type."""
    signs = [w for w in words if w in ("signed", "unsigned")]
    base = _INTEGER_WORDS_MAKE.get(" ".join(sorted(w for w in words if w not in signs)))
    if base is None or len(signs) > 1:
        return None
    return ("unsigned " if signs == ["unsigned"] else "signed " if signs and base == "char" else "") + base


def floating_type(text: str) -> CType | None:
    """float or double (qualified or not) for a header made from a .d file
    (notes like '8f@%rax'), else None; catalogs refuse them."""
    tokens = _type_tokens(text)
    size = {("float",): 4, ("double",): 8}.get(tuple(w for w in tokens if w not in _QUALIFIERS))
    return CType(_normalise(tokens), Kind.FLOAT, size, True) if size else None


# The headers that declare the integer typedefs, for generated C.
_HEADER_OF = {name: header for header, names in {
    "stdint.h": "intptr_t uintptr_t intmax_t uintmax_t " + " ".join(
        f"{s}int{k}{w}_t" for s in ("", "u") for k in ("", "_least", "_fast") for w in (8, 16, 32, 64)),
    "stddef.h": "size_t ptrdiff_t wchar_t",
    "stdbool.h": "bool",
    "sys/types.h": "ssize_t off_t pid_t uid_t gid_t u_int8_t u_int16_t u_int32_t u_int64_t u_char u_short u_int "
                   "u_long ino_t dev_t mode_t nlink_t id_t key_t clock_t suseconds_t useconds_t time_t off64_t loff_t",
    "sys/socket.h": "socklen_t",
    "netinet/in.h": "in_addr_t in_port_t",
    "signal.h": "sig_atomic_t",
}.items() for name in names.split()}


def system_headers(ctypes) -> list[str]:
    """System headers that declare the types used (sorted, no duplicates)."""
    words = {word for ctype in ctypes for word in re.findall(r"\w+", ctype.spelling)}
    return sorted({_HEADER_OF[word] for word in words if word in _HEADER_OF})
