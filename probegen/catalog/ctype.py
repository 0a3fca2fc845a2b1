"""Everything probegen knows about the C types of probe arguments.

The C facts only: for a type written as C in the catalog, its kind, its
size and signedness in a ``.note.stapsdt`` argument spec (what
``<sys/sdt.h>`` records), and the integer types of each size and sign.
Each output maps these facts to its own syntax in a table of its own
(bpftrace printf conversions, BCC read types, ...). Sizes are for the LP64
targets USDT is used on (x86_64, aarch64); ``pointer_size=4`` gives the
ILP32 answer.
"""

from __future__ import annotations

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

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def is_identifier(name: str) -> bool:
    """A C identifier that is not a C or C++ keyword."""
    # For ASCII text, Python's identifiers are C's: [A-Za-z_][A-Za-z0-9_]*.
    return name.isascii() and name.isidentifier() and name not in C_KEYWORDS


class Kind(enum.Enum):
    INTEGER = "integer"
    BOOL = "bool"
    ENUM = "enum"
    STRING = "string"  # char pointers: scripts read them with str()
    POINTER = "pointer"
    FUNCTION_POINTER = "function pointer"
    FLOAT = "floating-point"  # only in headers made from .d files (floating_type): no catalog holds one


# Integer spellings -> (size on LP64, signed, follows the pointer size).
# Plain char's sign is the target's choice (signed on x86, unsigned on
# aarch64), so it is marked None: either sign is right.
_INTEGERS: dict[str, tuple[int, bool | None, bool]] = {
    "char": (1, None, False),
    "signed char": (1, True, False),
    "unsigned char": (1, False, False),
    "short": (2, True, False),
    "unsigned short": (2, False, False),
    "int": (4, True, False),
    "unsigned int": (4, False, False),
    "long": (8, True, True),
    "unsigned long": (8, False, True),
    "long long": (8, True, False),
    "unsigned long long": (8, False, False),
    "int8_t": (1, True, False),
    "int16_t": (2, True, False),
    "int32_t": (4, True, False),
    "int64_t": (8, True, False),
    "uint8_t": (1, False, False),
    "uint16_t": (2, False, False),
    "uint32_t": (4, False, False),
    "uint64_t": (8, False, False),
    "size_t": (8, False, True),
    "ssize_t": (8, True, True),
    "intptr_t": (8, True, True),
    "uintptr_t": (8, False, True),
    "ptrdiff_t": (8, True, True),
    "off_t": (8, True, False),
    "pid_t": (4, True, False),
    "uid_t": (4, False, False),
    "gid_t": (4, False, False),
    # The rest of C's and POSIX's integer typedefs a .d file may name, as
    # glibc defines them (pointer-sized: 'long' there, 4 bytes on i386).
    "intmax_t": (8, True, False),
    "uintmax_t": (8, False, False),
    **{f"{s}int_least{w}_t": (w // 8, s == "", False) for s in ("", "u") for w in (8, 16, 32, 64)},
    "int_fast8_t": (1, True, False),
    "uint_fast8_t": (1, False, False),
    **{f"{s}int_fast{w}_t": (8, s == "", w < 64) for s in ("", "u") for w in (16, 32, 64)},
    **{f"u_int{w}_t": (w // 8, False, False) for w in (8, 16, 32, 64)},
    "u_char": (1, False, False),
    "u_short": (2, False, False),
    "u_int": (4, False, False),
    "u_long": (8, False, True),
    "time_t": (8, True, True),
    "clock_t": (8, True, True),
    "suseconds_t": (8, True, True),
    "useconds_t": (4, False, False),
    "off64_t": (8, True, False),
    "loff_t": (8, True, False),
    "ino_t": (8, False, True),
    "dev_t": (8, False, False),
    "mode_t": (4, False, False),
    "nlink_t": (8, False, True),
    "id_t": (4, False, False),
    "key_t": (4, True, False),
    "socklen_t": (4, False, False),
    "in_addr_t": (4, False, False),
    "in_port_t": (2, False, False),
    "sig_atomic_t": (4, True, False),
    "wchar_t": (4, True, False),
}

# Other ways of writing the same integer types.
_INTEGER_ALIASES = {
    "signed": "int",
    "signed int": "int",
    "unsigned": "unsigned int",
    "short int": "short",
    "signed short": "short",
    "signed short int": "short",
    "short signed": "short",
    "unsigned short int": "unsigned short",
    "short unsigned": "unsigned short",
    "long int": "long",
    "signed long": "long",
    "signed long int": "long",
    "long signed": "long",
    "unsigned long int": "unsigned long",
    "long unsigned": "unsigned long",
    "long unsigned int": "unsigned long",
    "long long int": "long long",
    "signed long long": "long long",
    "signed long long int": "long long",
    "unsigned long long int": "unsigned long long",
    "long long unsigned": "unsigned long long",
    "long long unsigned int": "unsigned long long",
}

_BOOLS = ("bool", "_Bool")
_FLOATS = ("float", "double", "long double")
_QUALIFIERS = ("const", "volatile", "restrict")
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+|\*|\(|\)|\[|\]|,|\.\.\.|\S")
_FUNCTION_POINTER = re.compile(r"^(?P<ret>.+?)\(\s*\*\s*\)\s*\((?P<params>.*)\)$")

# (size, signed, exact-width) -> the first spelling of _INTEGERS with them:
# "signed char", "short", "int", "long"...; "int8_t", "uint64_t"...
_INTEGER_NAMES = {(size, signed, name.endswith("_t")): name  # reversed: the first one wins
                  for name, (size, signed, _) in reversed(_INTEGERS.items()) if signed is not None}


def integer_type(size: int, signed: bool, exact: bool = False) -> str:
    """The C integer type of this size (LP64) and sign: with keywords
    ("unsigned long"), or ``exact`` the <stdint.h> name ("uint64_t")."""
    return _INTEGER_NAMES[(size, signed, exact)]


class CTypeError(ValueError):
    """A type the catalog cannot use; the message says why and what to write."""


@dataclass(frozen=True)
class CType:
    """A probe argument's C type.

    ``spelling`` is the type as C code writes it (normalised spacing), used
    verbatim in generated C. ``signed`` is None where either sign is
    correct (plain char, enums: an enum with no negative enumerator is
    unsigned to the compiler).
    """

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
        """"struct NAME" or "union NAME" for a pointer to one: what scripts
        cast the pointer to."""
        if self.struct_name is None:
            return None
        keyword = "union" if "union" in self.spelling.split() else "struct"
        return f"{keyword} {self.struct_name}"

    def size_on(self, pointer_size: int = 8) -> int:
        """Size in bytes on a target with this pointer size."""
        return pointer_size if self.pointer_sized else self.size

    def note_spec_size(self, pointer_size: int = 8) -> int:
        """The size field of the note's argument spec: negative when signed."""
        size = self.size_on(pointer_size)
        return -size if self.signed else size

    def matches_note(self, size: int, signed: bool, pointer_size: int = 8) -> bool:
        """Whether a note argument of this size and sign carries this type."""
        if size != self.size_on(pointer_size):
            return False
        return self.signed is None or self.signed == signed

    def promotes_from(self, size: int, signed: bool, pointer_size: int = 8) -> bool:
        """Whether a narrower integer passed at a site converts to this
        integer type without loss, as C converts it (a uint8_t to int, an
        unsigned to uint64_t; a signed value only to a signed type): the
        tracer reads the site's own size, so the value is the same."""
        if self.kind is not Kind.INTEGER or size >= self.size_on(pointer_size):
            return False
        return not signed or self.signed is not False

    def holds_constant(self, value: int, pointer_size: int = 8) -> bool:
        """Whether a literal the compiler recorded can be an argument of this
        type: the note gives the literal's own type ('false' is the int 0,
        '-4@$0'; a NULL may be '8@$0' or '4@$0'), so its size and sign say
        nothing; its value must be one this type holds. A bool holds 0 and 1;
        an unsigned type also takes a negative literal that C converts
        without loss of bits (-1 for all ones, a common sentinel); a type of
        either sign (plain char, an enum) takes both ranges."""
        if self.kind is Kind.BOOL:
            return value in (0, 1)
        bits = 8 * self.size_on(pointer_size)
        if self.signed is True:
            return -(1 << (bits - 1)) <= value < (1 << (bits - 1))
        return -(1 << (bits - 1)) <= value < (1 << bits)

    @property
    def is_integer_like(self) -> bool:
        return self.kind in (Kind.INTEGER, Kind.BOOL, Kind.ENUM)

    @property
    def is_address(self) -> bool:
        return self.kind in (Kind.POINTER, Kind.FUNCTION_POINTER)

    @property
    def signed_on_x86(self) -> bool:
        """The sign of the value on x86_64, where scripts run: plain char
        (sign None) is signed there."""
        return self.signed is not False

    def declare(self, name: str) -> str:
        """A C declaration of a variable ``name`` of this type."""
        match = "(" in self.spelling and _FUNCTION_POINTER.match(self.spelling)
        if match:
            return f"{match['ret'].rstrip()} (*{name})({match['params']})"
        if self.spelling.endswith("*"):
            return f"{self.spelling}{name}"
        return f"{self.spelling} {name}"


def _normalise(tokens: list[str]) -> str:
    text = ""
    for token in tokens:
        if token == "*":
            text = text.rstrip() + (" *" if not text.endswith("*") else "*")
        elif token in (",", ")", "]"):
            text = text.rstrip() + token + (" " if token == "," else "")
        elif token in ("(", "["):
            text += token
        else:
            if text and not text.endswith(("(", "[", " ")):
                text += " "
            text += token
    return text.strip()


# The tokens a type may be written with; any other character (quotes,
# ';', '#', braces, control characters) is an error, not passed on.
_TYPE_TOKEN = re.compile(r" *(?:([A-Za-z_][A-Za-z0-9_]*|[0-9]+|\.\.\.|[*()\[\],])| *\Z)")
_INTEGER_WORDS = frozenset(("signed", "unsigned", "char", "short", "int", "long"))
_OTHER_TYPE_WORDS = frozenset(("void", "bool", "_Bool", "float", "double"))
_TAGS = ("struct", "union", "enum")
_MAX_NESTING = 8  # function pointers taking function pointers...


def _type_tokens(text: str) -> list[str]:
    tokens = []
    position = 0
    while position < len(text):
        match = _TYPE_TOKEN.match(text, position)
        if match is None:
            char = text[position:].lstrip(" ")[0]
            raise CTypeError(f"unexpected {_shown_char(char)} in type '{_shown(text)}'")
        if match[1]:
            tokens.append(match[1])
        position = match.end()
    return tokens


def _shown_char(char: str) -> str:
    return f"'{char}'" if char.isprintable() else f"character U+{ord(char):04X}"


def _shown(text: str) -> str:
    """Text for a message: control characters as escapes, not raw."""
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


def _integer_words_valid(words: list[str]) -> bool:
    """Whether the integer keywords form a C integer type, in any order."""
    signs = sum(w in ("signed", "unsigned") for w in words)
    rest = sorted(w for w in words if w not in ("signed", "unsigned"))
    return signs <= 1 and (rest in ([], ["char"], ["short"], ["int", "short"], ["int"], ["long"],
                                     ["int", "long"], ["long", "long"], ["int", "long", "long"]))


@dataclass(frozen=True)
class _Shape:
    words: list  # the specifiers, qualifiers left out: ["unsigned", "int"], ["struct", "s"]
    stars: int  # pointer levels of the type (of the return type, for a function pointer)
    function: bool  # a pointer to a function
    tokens: list  # the type's tokens as C writes it, parameter names left out


class TokenCursor:
    """Position in a list of C tokens, for the small recursive-descent
    readers of catalog text (types here, the clock in catalog.cvalidate)."""

    def __init__(self, tokens: list[str]):
        self.tokens = tokens
        self.position = 0
        self.depth = 0

    def fail(self, why: str):
        raise ValueError(why)

    def peek(self, ahead: int = 0) -> str | None:
        index = self.position + ahead
        return self.tokens[index] if index < len(self.tokens) else None

    def take(self) -> str:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def expect(self, token: str) -> None:
        if self.peek() != token:
            found = self.peek()
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

    The tokens it accepts, parameter names left out, make the spelling
    generated files use: nothing of the catalog's text but those tokens.
    """

    def __init__(self, tokens: list[str], text: str):
        super().__init__(tokens)
        self.text = text
        self.kept: list[str] = []

    def fail(self, why: str):
        raise CTypeError(f"cannot read '{_shown(self.text)}' as a C type: {why}")

    def take(self, keep: bool = True) -> str:
        token = super().take()
        if keep:
            self.kept.append(token)
        return token

    def type_name(self) -> _Shape:
        words = self.specifiers()
        stars = self.pointers()
        function = self.peek() == "("
        if function:
            self.function_declarator(named=False)
        if self.peek() is not None:
            self.fail(f"unexpected '{self.peek()}'" + (
                "; function pointers are written 'ret (*)(params)'" if self.peek() in "()" else ""))
        return _Shape(words, stars, function, self.kept)

    def specifiers(self) -> list[str]:
        words: list[str] = []
        while (token := self.peek()) is not None:
            if token in _QUALIFIERS:
                self.take()
            elif token in _INTEGER_WORDS and all(w in _INTEGER_WORDS for w in words):
                words.append(self.take())
            elif token == "double" and words in ([], ["long"]):
                words.append(self.take())
            elif token == "long" and words == ["double"]:
                words.insert(0, self.take())
            elif words:
                break  # a parameter's name, or what follows the type
            elif token in _TAGS:
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
        if all(w in _INTEGER_WORDS for w in words) and not _integer_words_valid(words):
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
            self.take(keep=False)
        self.expect(")")
        self.expect("(")
        self.parameters()
        self.expect(")")
        self.depth -= 1

    def parameters(self) -> None:
        if self.peek() == ")":
            return
        if self.peek() == "void" and self.position + 1 < len(self.tokens) and self.tokens[self.position + 1] == ")":
            self.take()
            return
        while True:
            if self.peek() == "...":
                if not self.kept or self.kept[-1] != ",":
                    self.fail("'...' needs a parameter before it")
                self.take()
                return
            words = self.specifiers()
            stars = self.pointers()
            if self.peek() == "(":
                self.function_declarator(named=True)
            else:
                if words == ["void"] and not stars:
                    self.fail("'void' must be the only parameter")
                if is_identifier(self.peek() or ""):
                    self.take(keep=False)  # a parameter's name says nothing about the type
            if self.peek() != ",":
                return
            self.take()


def is_type_name(tokens: list[str]) -> bool:
    """Whether the tokens are one type of the grammar (a cast's type)."""
    try:
        _TypeParser(list(tokens), " ".join(tokens)).type_name()
    except CTypeError:
        return False
    return bool(tokens)


def parse_ctype(text: str, typedefs: dict[str, CType] | None = None) -> CType:
    """Parse a C type as the catalog writes it.

    ``typedefs`` maps typedef names declared in the catalog to their types.
    Raises ``CTypeError`` for anything a probe argument cannot be: the
    whole text must be one type of the grammar ``_TypeParser`` reads.
    """
    typedefs = typedefs or {}
    tokens = _type_tokens(text)
    if not tokens:
        raise CTypeError("empty type")
    if "[" in tokens:
        raise CTypeError(
            f"array type '{_normalise(tokens)}': arrays decay to pointers at the call; "
            "write 'const char *' for a char array, or a pointer type"
        )
    shape = _TypeParser(tokens, text).type_name()
    spelling = _normalise(shape.tokens)
    if shape.function:
        return CType(spelling, Kind.FUNCTION_POINTER, 8, False, pointer_sized=True)
    stars, words = shape.stars, shape.words
    base = " ".join(words)

    if stars:
        if base in ("char", "signed char", "unsigned char") and stars == 1:
            return CType(spelling, Kind.STRING, 8, False, pointer_sized=True)
        struct_name = None
        if stars == 1 and len(words) == 2 and words[0] in ("struct", "union"):
            struct_name = words[1]
        _check_base(base, words, typedefs, spelling, pointer=True)
        return CType(spelling, Kind.POINTER, 8, False, pointer_sized=True, struct_name=struct_name)

    if base in _INTEGER_ALIASES:
        base = _INTEGER_ALIASES[base]
    if base in _INTEGERS:
        size, signed, pointer_sized = _INTEGERS[base]
        return CType(spelling, Kind.INTEGER, size, signed, pointer_sized)
    if base in _BOOLS:
        return CType(spelling, Kind.BOOL, 1, False)
    if len(words) == 2 and words[0] == "enum":
        return CType(spelling, Kind.ENUM, 4, None, enum_name=words[1])
    if len(words) == 1 and words[0] in typedefs:
        # Generated C spells the target type, so call sites need not see
        # the typedef; ``alias`` keeps the name for docs.
        return dataclasses.replace(typedefs[words[0]], alias=words[0])
    _check_base(base, words, typedefs, spelling, pointer=False)
    raise CTypeError(f"unsupported type '{spelling}'")


def floating_type(text: str) -> CType | None:
    """float or double (qualified or not), as <sys/sdt.h> passes them
    (notes like '8f@%rax'), for a header made from a .d file; else None.
    Catalogs refuse them: bpftrace and BCC cannot read them."""
    words = [w for w in _type_tokens(text) if w not in _QUALIFIERS]
    if words in (["float"], ["double"]):
        return CType(_normalise(_type_tokens(text)), Kind.FLOAT, 4 if words == ["float"] else 8, True)
    return None


def _check_base(base, words, typedefs, spelling, pointer):
    if base in _FLOATS:
        if pointer:
            return
        raise CTypeError(
            f"floating-point type '{spelling}' is not supported: "
            "bpftrace and BCC cannot read floating-point USDT arguments"
        )
    if words and words[0] in ("struct", "union"):
        if len(words) != 2:
            raise CTypeError(f"cannot read '{spelling}': expected '{words[0]} NAME'")
        if not pointer:
            raise CTypeError(
                f"'{spelling}' passed by value is not supported: a probe argument "
                f"is one register or memory word; pass '{spelling} *'"
            )
        return
    if words and words[0] == "enum" and len(words) == 2:
        return
    if base == "void" or base in _INTEGERS or base in _INTEGER_ALIASES or base in _BOOLS:
        return
    if len(words) == 1 and words[0] in typedefs:
        return
    if len(words) == 1:
        if pointer:
            return  # a pointer to a type declared elsewhere: its size is known
        raise CTypeError(
            f"unknown type '{spelling}': declare it under 'typedefs:' "
            f"(for example '{spelling}: \"void (*)(void *)\"')"
        )
    raise CTypeError(f"unknown type '{spelling}'")


# Where the typedef'd integer types come from, for generated C.
_DEFINING_HEADER = {
    **{f"{s}int{w}_t": "stdint.h" for s in ("", "u") for w in (8, 16, 32, 64)},
    "intptr_t": "stdint.h", "uintptr_t": "stdint.h",
    "size_t": "stddef.h", "ptrdiff_t": "stddef.h",
    "ssize_t": "sys/types.h", "off_t": "sys/types.h", "pid_t": "sys/types.h",
    "uid_t": "sys/types.h", "gid_t": "sys/types.h",
    "bool": "stdbool.h",
    "intmax_t": "stdint.h", "uintmax_t": "stdint.h",
    **{f"{s}int_{k}{w}_t": "stdint.h" for s in ("", "u") for k in ("least", "fast") for w in (8, 16, 32, 64)},
    **{name: "sys/types.h" for name in ("u_int8_t", "u_int16_t", "u_int32_t", "u_int64_t", "u_char", "u_short",
                                          "u_int", "u_long", "ino_t", "dev_t", "mode_t", "nlink_t", "id_t",
                                          "key_t", "clock_t", "suseconds_t", "useconds_t", "time_t")},
    "off64_t": "sys/types.h", "loff_t": "sys/types.h",
    "socklen_t": "sys/socket.h", "in_addr_t": "netinet/in.h", "in_port_t": "netinet/in.h",
    "sig_atomic_t": "signal.h", "wchar_t": "stddef.h",
}


def system_headers(ctypes) -> list[str]:
    """System headers that declare the types used (sorted, no duplicates)."""
    needed = set()
    for spelling in {ctype.spelling for ctype in ctypes}:
        for word in _TOKEN.findall(spelling):
            if word in _DEFINING_HEADER:
                needed.add(_DEFINING_HEADER[word])
    return sorted(needed)
