"""The structs a script defines at its top: each member's name, position and,
where it is plain, type (so ``((struct x *)arg1)->name`` can be checked
without a binary), and its declaration as written, which
probegen.checks.lint.layout lays out as a compiler does.

Declarations are read, not evaluated: a member whose type this does not
understand is still known to exist, with an unknown type. The patterns are
written so that no input makes them backtrack more than linearly (a script
is untrusted text): no two adjacent parts match the same characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from probegen.catalog.ctype import CType, CTypeError, parse_ctype
from probegen.errors import Location
from probegen.checks.lint.lexer import COMMENT, Positions, ScriptSyntaxError

_AGGREGATE = re.compile(r"\b(struct|union)\s+(?:([A-Za-z_]\w*)\s*)?\{")
_FUNCTION_POINTER = re.compile(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)")
_NOT_NEWLINE = re.compile(r"[^\n]")
_BIT_WIDTH = re.compile(r"\s*\w+\s*")
# __attribute__((...)) with one level of inner parentheses: aligned(8).
_ATTRIBUTE = re.compile(r"__attribute__\s*\(\(((?:[^()]|\([^()]*\))*)\)\)")
_ALIGNED = re.compile(r"\b(?:__)?aligned(?:__)?\s*\(\s*(\d+)\s*\)")
_PACKED = re.compile(r"\b(?:__)?packed(?:__)?\b")
_BOUND = re.compile(r"\[\s*(\d*)\s*\]")
_BITS = re.compile(r":\s*(\d+)\s*$")
_BRACES = re.compile(r"[{}]")
_SPLITTERS = {sep: re.compile(r"[{}()\[\]" + re.escape(sep) + "]") for sep in ";,"}
_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_QUALIFIERS = {"const", "volatile", "restrict"}
# Structs defined inside structs, at most; deeper is refused with a position.
MAX_NESTED_STRUCTS = 64


@dataclass(frozen=True)
class Field:
    """One member as declared: what the checker reads, then what laying it out needs."""
    name: str | None  # None: an anonymous struct or union member
    location: Location
    ctype: CType | None = None  # None: not known
    text: bool = False  # a char array: bpftrace prints it with %s as is
    struct: str | None = None  # the struct it points to or holds
    base: str = ""  # the type's words without qualifiers: "short unsigned int", "struct x"
    stars: int = 0
    bounds: tuple[int, ...] | None = ()  # array bounds ([] is 0); None: a bound that is no plain number
    bits: int | None = None  # a bitfield's width
    packed: bool = False
    aligned: int | None = None
    inner: StructDef | None = None  # a struct or union defined in place
    function_pointer: bool = False
    understood: bool = True  # False: a declaration this reader cannot lay out


@dataclass
class StructDef:
    name: str | None
    location: Location
    kind: str = "struct"  # or "union"
    members: dict[str, Field] = field(default_factory=dict)  # by name, an anonymous member's own included
    fields: list[Field] = field(default_factory=list)  # declarations in order
    packed: bool = False  # __attribute__((packed)) on the struct


def _declarator(text: str) -> tuple[str, int, str, str, int] | None:
    """``const char *name[4] : 3`` taken apart from its end: (base type,
    stars, name, array bounds, where the name starts)."""
    end = len(text.rstrip())
    colon = text.rfind(":", 0, end)
    if colon >= 0 and _BIT_WIDTH.fullmatch(text, colon + 1, end):
        end = len(text[:colon].rstrip())
    arrays_end = end
    while end and text[end - 1] == "]":
        open_bracket = text.rfind("[", 0, end)
        if open_bracket < 0 or "]" in text[open_bracket + 1:end - 1]:
            return None
        end = len(text[:open_bracket].rstrip())
    start = end
    while start and text[start - 1] in _WORD:
        start -= 1
    if start == end or text[start].isdigit():
        return None
    base_end = start
    while base_end and (text[base_end - 1] == "*" or text[base_end - 1].isspace()):
        base_end -= 1
    return text[:base_end], text[base_end:start].count("*"), text[start:end], text[end:arrays_end].strip(), start


def _typed(words: list[str], stars: int, array: bool, typedefs) -> dict:
    """What the checker knows of a member of this type (Field's ctype, text, struct)."""
    struct = words[1] if len(words) == 2 and words[0] in ("struct", "union") else None
    if array:
        return {"text": bool(words) and words[-1] == "char" and not stars}
    if struct:
        return {"ctype": parse_ctype(" ".join(words) + " *") if stars == 1 else None, "struct": struct}
    try:
        return {"ctype": parse_ctype(" ".join(words) + (" " + "*" * stars if stars else ""), typedefs)}
    except CTypeError:
        return {}


def _matching_brace(text: str, open_index: int) -> int:
    depth = 0
    for brace in _BRACES.finditer(text, open_index):
        depth += 1 if brace.group() == "{" else -1
        if depth == 0:
            return brace.start()
    return len(text)


def _split_top_level(body: str, separator: str) -> list[tuple[int, str]]:
    """Parts between separators outside brackets: (offset of the part's
    first non-blank character, stripped text)."""
    cuts, depth = [], 0
    for mark in _SPLITTERS[separator].finditer(body):
        char = mark.group()
        if char in "{([":
            depth += 1
        elif char in "})]":
            depth -= 1
        elif depth == 0:
            cuts.append(mark.start())
    parts, start = [], 0
    for end in cuts + [len(body)]:
        part = body[start:end]
        if part.strip():
            parts.append((start + len(part) - len(part.lstrip()), part.strip()))
        start = end + 1
    return parts


class _Reader:
    """Reads one C definition token; offsets are into its text, turned
    into script positions with the token's own line and column."""

    def __init__(self, path: str, typedefs, text: str, line: int, column: int):
        self.path, self.typedefs = path, typedefs
        self.text = COMMENT.sub(lambda m: _NOT_NEWLINE.sub(" ", m[0]), text)  # offsets and lines kept
        self.where = Positions(self.text, line, column)
        self.nesting = 0
        self.structs: dict[str, StructDef] = {}

    def location(self, offset: int) -> Location:
        return Location(self.path, *self.where(offset))

    def too_deep(self, offset: int):
        line, column = self.where(offset)
        raise ScriptSyntaxError(self.path, line, column, f"structs nested more than {MAX_NESTED_STRUCTS} deep")

    def read(self):
        depth = deepest = where = 0
        for brace in _BRACES.finditer(self.text):  # refused at once, not after a walk per level
            depth += 1 if brace.group() == "{" else -1
            if depth > deepest:
                deepest, where = depth, brace.start()
        if deepest > MAX_NESTED_STRUCTS + 1:
            self.too_deep(where)
        pos = 0
        while match := _AGGREGATE.search(self.text, pos):
            close = _matching_brace(self.text, match.end() - 1)
            self.aggregate(match, close)
            pos = close + 1

    def aggregate(self, match, close) -> StructDef:
        """The struct whose '{' ends ``match``, registered under its tag if it has one."""
        struct = StructDef(match.group(2), self.location(match.start()), match.group(1))
        for offset, declaration in _split_top_level(self.text[match.end():close], ";"):
            self.declaration(match.end() + offset, declaration, struct)
        end = self.text.find(";", close)
        attributes = _ATTRIBUTE.findall(self.text, close, len(self.text) if end < 0 else end)
        struct.packed = any(_PACKED.search(a) for a in attributes)
        if match.group(2):
            self.structs[match.group(2)] = struct
        return struct

    @staticmethod
    def add(struct: StructDef, member: Field):
        struct.fields.append(member)
        if member.name is None:  # anonymous: its members are the outer struct's
            struct.members.update(member.inner.members)
        else:
            struct.members[member.name] = member

    def declaration(self, offset: int, declaration: str, struct: StructDef):
        nested = _AGGREGATE.match(self.text, offset)
        if nested:
            if self.nesting >= MAX_NESTED_STRUCTS:
                self.too_deep(offset)
            close = _matching_brace(self.text, nested.end() - 1)
            self.nesting += 1
            try:
                inner = self.aggregate(nested, close)
            finally:
                self.nesting -= 1
            names = _split_top_level(self.text[close + 1:offset + len(declaration)], ",")
            if not names:
                self.add(struct, Field(None, self.location(offset), inner=inner))
            for name_offset, name in names:
                found = re.match(r"[\s*]*([A-Za-z_]\w*)", name)
                if found:
                    plain = re.fullmatch(r"\s*[A-Za-z_]\w*\s*", name) is not None
                    self.add(struct, Field(found.group(1), self.location(close + 1 + name_offset),
                                           struct=nested.group(2), inner=inner, understood=plain))
            return
        pointer = _FUNCTION_POINTER.search(declaration)
        if pointer:
            self.add(struct, Field(pointer.group(1), self.location(offset + pointer.start(1)), function_pointer=True))
            return
        attributes = " ".join(_ATTRIBUTE.findall(declaration))
        packed = _PACKED.search(attributes) is not None
        aligned = _ALIGNED.search(attributes)
        declaration = _ATTRIBUTE.sub(lambda m: " " * len(m[0]), declaration)  # offsets kept
        bits = _BITS.search(declaration)
        parts = _split_top_level(declaration, ",")
        words = []
        for index, (part_offset, declarator) in enumerate(parts):
            prefix = "x " if index else ""  # a base type before the later declarators
            taken = _declarator(prefix + declarator)
            if taken is None and index == 0:
                return
            if taken is None:
                continue
            base, stars, name, arrays, name_start = taken
            if index == 0:
                words = [w for w in base.split() if w not in _QUALIFIERS]
            bounds = _BOUND.findall(arrays)
            plain = "".join(f"[{b}]" for b in bounds) == re.sub(r"\s", "", arrays)
            self.add(struct, Field(
                name, self.location(offset + part_offset + name_start - len(prefix)),
                **_typed(words, stars, bool(arrays), self.typedefs), base=" ".join(words), stars=stars,
                bounds=tuple(int(b or 0) for b in bounds) if plain else None,
                bits=int(bits.group(1)) if bits and index == 0 else None,
                packed=packed, aligned=int(aligned.group(1)) if aligned else None,
                understood=bits is None or len(parts) == 1))


def struct_definitions(definitions, path: str, typedefs=None) -> dict[str, StructDef]:
    """Structs and unions defined in a script's C definitions, by tag."""
    structs: dict[str, StructDef] = {}
    for definition in definitions:
        reader = _Reader(path, typedefs or {}, definition.text, definition.line, definition.column)
        reader.read()
        structs.update(reader.structs)
    return structs
