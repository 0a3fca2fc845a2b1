"""Member names (and, where it is plain, types) of the structs a script
defines at its top, so casts like ``((struct x *)arg1)->name`` can be
checked without a binary.

Only declarations are read, not evaluated: a member whose type this does
not understand is still known to exist, just with an unknown type. Each
struct also keeps its declarations in order (``fields``), from which
probegen.checks.lint.layout works out where a compiler puts each member.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from probegen.catalog.ctype import CType, CTypeError, parse_ctype
from probegen.errors import Location
from probegen.checks.lint.lexer import ScriptSyntaxError

# The patterns here are written so that no input makes them backtrack
# more than linearly (a script is untrusted text): no two adjacent parts
# match the same characters.
_AGGREGATE = re.compile(r"\b(struct|union)\s+(?:([A-Za-z_]\w*)\s*)?\{")
_FUNCTION_POINTER = re.compile(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)")
_COMMENT_START = re.compile(r"//|/\*")
_NOT_NEWLINE = re.compile(r"[^\n]")
_BIT_WIDTH = re.compile(r"\s*\w+\s*")
# __attribute__((...)) with one level of inner parentheses: aligned(8).
_ATTRIBUTE = re.compile(r"__attribute__\s*\(\(((?:[^()]|\([^()]*\))*)\)\)")
_ALIGNED = re.compile(r"\b(?:__)?aligned(?:__)?\s*\(\s*(\d+)\s*\)")
_PACKED = re.compile(r"\b(?:__)?packed(?:__)?\b")
_BOUND = re.compile(r"\[\s*(\d*)\s*\]")
_BITS = re.compile(r":\s*(\d+)\s*$")
_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_QUALIFIERS = {"const", "volatile", "restrict"}
# Structs defined inside structs, at most; deeper is refused with a position.
MAX_NESTED_STRUCTS = 64


def _blank_comments(text: str) -> str:
    """``text`` with every comment replaced by spaces, newlines kept (so
    offsets and lines stay); one pass, whatever is unclosed."""
    parts, pos = [], 0
    for opener in _COMMENT_START.finditer(text):
        start = opener.start()
        if start < pos:  # inside a comment already blanked
            continue
        if opener.group() == "//":
            end = text.find("\n", start)
        else:
            end = text.find("*/", start + 2)
            end = end + 2 if end >= 0 else -1
        end = len(text) if end < 0 else end
        parts.append(text[pos:start])
        parts.append(_NOT_NEWLINE.sub(" ", text[start:end]))
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


@dataclass(frozen=True)
class _Declarator:
    """``const char *name[4] : 3`` taken apart."""
    base: str
    stars: str
    name: str
    arrays: str
    name_start: int


def _declarator(text: str) -> _Declarator | None:
    """The declarator of one member, read from its end: optional bit
    width, array bounds, the name, the stars before it, and the base type."""
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
    name = text[start:end]
    if not name or name[0].isdigit():
        return None
    stars_start = start
    while stars_start and (text[stars_start - 1] == "*" or text[stars_start - 1].isspace()):
        stars_start -= 1
    return _Declarator(text[:stars_start], text[stars_start:start], name,
                       text[end:arrays_end].strip(), start)


@dataclass(frozen=True)
class MemberInfo:
    ctype: CType | None = None
    text: bool = False  # a char array: bpftrace prints it with %s as is
    struct: str | None = None  # the struct it points to or holds
    location: Location | None = None  # of the member's declaration


@dataclass(frozen=True)
class FieldDecl:
    """One member declaration as written, for laying the struct out."""
    name: str | None  # None: an anonymous struct or union member
    location: Location
    base: str = ""  # the type's words without qualifiers: "short unsigned int", "struct x"
    stars: int = 0
    bounds: tuple[int, ...] | None = ()  # array bounds ([] is 0); None: a bound that is no plain number
    bits: int | None = None  # a bitfield's width
    packed: bool = False
    aligned: int | None = None
    inner: "StructDef | None" = None  # a struct or union defined in place
    function_pointer: bool = False
    understood: bool = True  # False: a declaration this reader cannot lay out


@dataclass
class StructDef:
    name: str | None
    location: Location
    members: dict[str, MemberInfo] = field(default_factory=dict)
    kind: str = "struct"  # or "union"
    fields: list[FieldDecl] = field(default_factory=list)  # declarations in order
    packed: bool = False  # __attribute__((packed)) on the struct


_BRACES = re.compile(r"[{}]")
_SPLITTERS = {sep: re.compile(r"[{}()\[\]" + re.escape(sep) + "]") for sep in ";,"}


def _matching_brace(text: str, open_index: int) -> int:
    depth = 0
    for brace in _BRACES.finditer(text, open_index):
        if brace.group() == "{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return brace.start()
    return len(text)


def _deepest_brace(text: str) -> tuple[int, int]:
    """(greatest brace depth, offset of the brace that first reaches it)."""
    depth, deepest, where = 0, 0, 0
    for brace in _BRACES.finditer(text):
        depth += 1 if brace.group() == "{" else -1
        if depth > deepest:
            deepest, where = depth, brace.start()
    return deepest, where


def _split_top_level(body: str, separator: str) -> list[tuple[int, str]]:
    """Parts between separators outside brackets: (offset of the part's
    first non-blank character, stripped text)."""
    parts, depth, start = [], 0, 0
    for mark in _SPLITTERS[separator].finditer(body):
        char = mark.group()
        if char in "{([":
            depth += 1
        elif char in "})]":
            depth -= 1
        elif depth == 0:
            _add_part(parts, body, start, mark.start())
            start = mark.start() + 1
    _add_part(parts, body, start, len(body))
    return parts


def _add_part(parts: list, body: str, start: int, end: int) -> None:
    part = body[start:end]
    if part.strip():
        parts.append((start + len(part) - len(part.lstrip()), part.strip()))


def _member_info(base: str, stars: int, arrays: str, typedefs, location) -> MemberInfo:
    words = [w for w in base.split() if w not in _QUALIFIERS]
    struct = words[1] if len(words) == 2 and words[0] in ("struct", "union") else None
    if arrays:
        is_char = words and words[-1] == "char" and not stars
        return MemberInfo(text=bool(is_char), location=location)
    if struct:
        spelling = " ".join(words) + " " + "*" * stars if stars else None
        ctype = None
        if stars == 1:
            ctype = parse_ctype(spelling)
        return MemberInfo(ctype=ctype, struct=struct, location=location)
    try:
        spelling = " ".join(words) + (" " + "*" * stars if stars else "")
        return MemberInfo(ctype=parse_ctype(spelling, typedefs), location=location)
    except CTypeError:
        return MemberInfo(location=location)


class _Reader:
    """Reads one C definition token; offsets are into its text, turned
    into script positions with the token's own line and column."""

    def __init__(self, path: str, typedefs, text: str, line: int, column: int):
        self.path = path
        self.typedefs = typedefs
        self.text = _blank_comments(text)
        self.nesting = 0
        self.newlines: list[int] | None = None
        self.line, self.column = line, column
        self.structs: dict[str, StructDef] = {}

    def location(self, offset: int) -> Location:
        if self.newlines is None:  # once: a struct of many members asks often
            self.newlines = [m.start() for m in re.finditer("\n", self.text)]
        before = bisect.bisect_left(self.newlines, offset)
        line = self.line + before
        column = self.column + offset if before == 0 else offset - self.newlines[before - 1]
        return Location(self.path, line, column)

    def read(self):
        deepest, where = _deepest_brace(self.text)
        if deepest > MAX_NESTED_STRUCTS + 1:
            at = self.location(where)
            raise ScriptSyntaxError(self.path, at.line, at.column,
                                    f"structs nested more than {MAX_NESTED_STRUCTS} deep")
        pos = 0
        while True:
            match = _AGGREGATE.search(self.text, pos)
            if not match:
                return
            close = _matching_brace(self.text, match.end() - 1)
            self.aggregate(match, close)
            pos = close + 1

    def aggregate(self, match, close) -> StructDef:
        """The struct whose '{' ends ``match``, registered under its tag if
        it has one."""
        struct = StructDef(match.group(2), self.location(match.start()), kind=match.group(1))
        for offset, declaration in _split_top_level(self.text[match.end():close], ";"):
            self.declaration(match.end() + offset, declaration, struct)
        end = self.text.find(";", close)
        attributes = _ATTRIBUTE.findall(self.text, close, len(self.text) if end < 0 else end)
        struct.packed = any(_PACKED.search(a) for a in attributes)
        if match.group(2):
            self.structs[match.group(2)] = struct
        return struct

    def declaration(self, offset: int, declaration: str, struct: StructDef):
        members = struct.members
        nested = _AGGREGATE.match(self.text, offset)
        if nested:
            if self.nesting >= MAX_NESTED_STRUCTS:
                where = self.location(offset)
                raise ScriptSyntaxError(self.path, where.line, where.column,
                                        f"structs nested more than {MAX_NESTED_STRUCTS} deep")
            close = _matching_brace(self.text, nested.end() - 1)
            self.nesting += 1
            try:
                inner = self.aggregate(nested, close)
            finally:
                self.nesting -= 1
            tail_start = close + 1
            names = _split_top_level(self.text[tail_start:offset + len(declaration)], ",")
            if not names:  # anonymous: its members are the outer struct's
                members.update(inner.members)
                struct.fields.append(FieldDecl(None, self.location(offset), inner=inner))
            for name_offset, name in names:
                found = re.match(r"[\s*]*([A-Za-z_]\w*)", name)
                if found:
                    where = self.location(tail_start + name_offset)
                    members[found.group(1)] = MemberInfo(struct=nested.group(2), location=where)
                    plain = re.fullmatch(r"\s*[A-Za-z_]\w*\s*", name) is not None
                    struct.fields.append(FieldDecl(found.group(1), where, inner=inner, understood=plain))
            return
        pointer = _FUNCTION_POINTER.search(declaration)
        if pointer:
            where = self.location(offset + pointer.start(1))
            members[pointer.group(1)] = MemberInfo(location=where)
            struct.fields.append(FieldDecl(pointer.group(1), where, function_pointer=True))
            return
        attributes = " ".join(_ATTRIBUTE.findall(declaration))
        packed = _PACKED.search(attributes) is not None
        aligned = _ALIGNED.search(attributes)
        declaration = _ATTRIBUTE.sub(lambda m: " " * len(m[0]), declaration)  # offsets kept
        bits = _BITS.search(declaration)
        base = None
        for index, (part_offset, declarator) in enumerate(_split_top_level(declaration, ",")):
            prefix = ""
            if index == 0:
                match = _declarator(declarator)
                if not match:
                    return
                base = match.base
            else:
                prefix = "x "
                match = _declarator(prefix + declarator)
                if not match:
                    continue
            where = self.location(offset + part_offset + match.name_start - len(prefix))
            members[match.name] = _member_info(
                base, match.stars.count("*"), match.arrays, self.typedefs, where)
            bounds = _BOUND.findall(match.arrays)
            plain = "".join(f"[{b}]" for b in bounds) == re.sub(r"\s", "", match.arrays)
            struct.fields.append(FieldDecl(
                match.name, where, " ".join(w for w in base.split() if w not in _QUALIFIERS),
                match.stars.count("*"), tuple(int(b or 0) for b in bounds) if plain else None,
                int(bits.group(1)) if bits and index == 0 else None, packed,
                int(aligned.group(1)) if aligned else None,
                understood=bits is None or len(_split_top_level(declaration, ",")) == 1))


def struct_definitions(definitions, path: str, typedefs=None) -> dict[str, StructDef]:
    """Structs and unions defined in a script's C definitions, by tag."""
    structs: dict[str, StructDef] = {}
    for definition in definitions:
        reader = _Reader(path, typedefs or {}, definition.text, definition.line, definition.column)
        reader.read()
        structs.update(reader.structs)
    return structs
