"""The structs a script defines at its top, laid out as they are read: each
member's name, position, type where it is plain (``((struct x *)arg1)->name``
is checked without a binary) and offset (probegen.checks.lint.layout). A
member whose type is not understood still exists, of an unknown type.
"""

import re
from collections import namedtuple

from probegen.bpftrace import COMMENT
from probegen.catalog.ctype import CTypeError, floating_type, parse_ctype
from probegen.errors import Location
from probegen.checks.lint.layout import Layout, Shape, array, scalar
from probegen.checks.lint.lexer import ScriptSyntaxError, positions

_AGGREGATE = re.compile(r"\b(struct|union)\s+(?:([A-Za-z_]\w*)\s*)?\{")
_FUNCTION_POINTER = re.compile(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)")
_BIT_WIDTH = re.compile(r"\s*(\w+)\s*")
# __attribute__((...)) with one level of inner parentheses: aligned(8).
_ATTRIBUTE = re.compile(r"__attribute__\s*\(\(((?:[^()]|\([^()]*\))*)\)\)")
# aligned(0) asks for none; no number of more than 18 digits is read (int() refuses thousands).
_ALIGNED = re.compile(r"\b(?:__)?aligned(?:__)?\s*\(\s*0*([1-9]\d{0,17})\s*\)")
_PACKED = re.compile(r"\b(?:__)?packed(?:__)?\b")
_BOUND = re.compile(r"\[\s*(\d{0,18})\s*\]")
_SPLITTER = re.compile(r"[{}()\[\];,]")
_DEPTH = {"{": 1, "(": 1, "[": 1, "}": -1, ")": -1, "]": -1}
_WORD = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
_QUALIFIERS = {"const", "volatile", "restrict"}
# Structs defined inside structs, at most; deeper is refused with a position.
MAX_NESTED_STRUCTS = 64


# One member as declared: what the checker reads (ctype: None if not known; text: a char array,
# printed with %s as is; struct: the one it points to or holds), then where it is laid out
# (spelling: its type as written, "struct x *", "char[16]"; bit: where it starts, None after a
# declaration that cannot be sized; bits: a bitfield's width).
Field = namedtuple("Field", "name location ctype text struct spelling shape bit bits",
                   defaults=(None, False, None, "", None, None, None))


# members: by name, an anonymous member's own included; kind: "struct" or "union".
StructDef = namedtuple("StructDef", "name location layout kind members")


def _declarator(text: str) -> tuple[str, int, str, str, int, int | None] | None:
    """``const char *name[4] : 3`` taken apart from its end: (base type,
    stars, name, array bounds, where the name starts, bit width)."""
    end, bits = len(text.rstrip()), None
    colon = text.rfind(":", 0, end)
    width = _BIT_WIDTH.fullmatch(text, colon + 1, end) if colon >= 0 else None
    if width:
        bits = int(width[1]) if width[1].isdecimal() and len(width[1]) < 19 else None
        end = len(text[:colon].rstrip())
    arrays_end = end
    while end and text[end - 1] == "]":
        open_bracket = text.rfind("[", 0, end)
        if open_bracket < 0 or "]" in text[open_bracket + 1:end - 1]:
            return None
        end = len(text[:open_bracket].rstrip())
    start = len(text[:end].rstrip(_WORD))
    if start == end or text[start].isdigit():
        return None
    base_end = start
    while base_end and (text[base_end - 1] == "*" or text[base_end - 1].isspace()):
        base_end -= 1
    return text[:base_end], text[base_end:start].count("*"), text[start:end], text[end:arrays_end].strip(), start, bits


def _split_top_level(body: str, separator: str) -> list[tuple[int, str]]:
    """Parts between separators outside brackets: (offset of the part's
    first non-blank character, stripped text)."""
    parts, start, depth = [], 0, 0
    for mark in _SPLITTER.finditer(body + separator):
        depth += _DEPTH.get(mark.group(), 0)
        if mark.group() == separator and depth == 0 or mark.end() > len(body):
            part = body[start:mark.start()]
            if part.strip():
                parts.append((start + len(part) - len(part.lstrip()), part.strip()))
            start = mark.end()
    return parts


class _Reader:
    """One C definition token; offsets are into its text."""

    def __init__(self, path: str, typedefs, pointer_size: int, structs: dict, text: str, line: int, column: int):
        self.path, self.typedefs, self.pointer_size, self.structs = path, typedefs, pointer_size, structs
        self.text = COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m[0]), text)  # offsets and lines kept
        self.where = positions(self.text, line, column)
        self.closes: dict[int, int] = {}  # where each '{' is closed

    def location(self, offset: int) -> Location:
        return Location(self.path, *self.where(offset))

    def read(self):
        opens, deepest, where = [], 0, 0
        for brace in re.finditer("[{}]", self.text):  # one walk: too deep is refused at once
            if brace.group() == "{":
                opens.append(brace.start())
                if len(opens) > deepest:
                    deepest, where = len(opens), brace.start()
            elif opens:
                self.closes[opens.pop()] = brace.start()
        if deepest > MAX_NESTED_STRUCTS + 1:
            raise ScriptSyntaxError(f"cannot parse: structs nested more than {MAX_NESTED_STRUCTS} deep",
                                    self.location(where))
        pos = 0
        while match := _AGGREGATE.search(self.text, pos):
            pos = self.aggregate(match)[1] + 1

    def aggregate(self, match) -> tuple[StructDef, int]:
        """The struct whose '{' ends ``match``, registered under its tag if it has one, and where its '}' is."""
        close = self.closes.get(match.end() - 1, len(self.text))
        end = self.text.find(";", close)
        attributes = " ".join(_ATTRIBUTE.findall(self.text, close, len(self.text) if end < 0 else end))
        aligned = _ALIGNED.search(attributes)
        layout = Layout(match[1] == "union", _PACKED.search(attributes) is not None, int(aligned[1]) if aligned else 1)
        struct = StructDef(match[2], self.location(match.start()), layout, match[1], {})
        for offset, declaration in _split_top_level(self.text[match.end():close], ";"):
            self.declaration(match.end() + offset, declaration, struct)
        if match[2]:
            self.structs[match[2]] = struct
        return struct, close

    def declaration(self, offset: int, declaration: str, struct: StructDef):
        nested = _AGGREGATE.match(self.text, offset)
        inner, words = None, None
        if nested:  # a struct defined in place: its declarators follow the '}'
            inner, close = self.aggregate(nested)
            words = [word for word in nested.group(1, 2) if word]
            offset, declaration = close + 1, self.text[close + 1:offset + len(declaration)]
        elif pointer := _FUNCTION_POINTER.search(declaration):
            shape = Shape("pointer", self.pointer_size, self.pointer_size)
            struct.members[pointer[1]] = Field(pointer[1], self.location(offset + pointer.start(1)), shape=shape,
                                               spelling="a function pointer", bit=struct.layout.place(shape))
            return
        attributes = " ".join(_ATTRIBUTE.findall(declaration))
        packed = _PACKED.search(attributes) is not None
        aligned = _ALIGNED.search(attributes)
        declaration = _ATTRIBUTE.sub(lambda m: " " * len(m[0]), declaration)  # offsets kept
        parts = _split_top_level(declaration, ",")
        if inner and not parts:  # anonymous: its members are the outer struct's, moved to where it starts
            start = struct.layout.place(inner.layout.shape(None))
            for name, member in inner.members.items():
                struct.members[name] = member._replace(bit=None if None in (start, member.bit) else member.bit + start)
        for part_offset, declarator in parts:
            prefix = "" if words is None else "x "  # a base type before the later declarators
            taken = _declarator(prefix + declarator)
            if taken is None:
                struct.layout.complete = False  # not laid out: no offset after it is claimed
                if words is None:
                    return
                continue
            base, stars, name, arrays, name_start, bits = taken
            if words is None:
                words = [w for w in base.split() if w not in _QUALIFIERS]
            self.member(struct, name, offset + part_offset + name_start - len(prefix), words, stars, arrays, bits,
                        packed, int(aligned[1]) if aligned else None, inner)

    def member(self, struct: StructDef, name: str, offset: int, words: list[str], stars: int, arrays: str,
               bits: int | None, packed: bool, aligned: int | None, inner: StructDef | None):
        """One declarator's member, laid out after the members before it."""
        typed = " ".join(words) + (" " + "*" * stars if stars else "")
        try:
            ctype = parse_ctype(typed, self.typedefs)
        except CTypeError:
            ctype = None
        tag = words[1] if len(words) == 2 and words[0] in ("struct", "union") else None
        if words in (["float"], ["double"]) and not stars:  # laid out, never printed
            shape = scalar(floating_type(typed), self.pointer_size)
        elif stars or not (inner or tag):
            shape = scalar(ctype, self.pointer_size)
        else:
            target = inner or self.structs.get(tag)
            shape = target.layout.shape(tag) if target else None
        found = _BOUND.findall(arrays)
        bounds = [int(b or 0) for b in found]
        if "".join(f"[{b}]" for b in found) != re.sub(r"\s", "", arrays):
            shape, bounds = None, []  # a bound that is no plain number
        elif bounds and shape:
            shape = array(shape, bounds)
        start = struct.layout.place(shape, bits, packed, aligned)
        base = f"{inner.kind} {{...}}" if inner and not tag else " ".join(words)
        spelling = base + (" " + "*" * stars if stars else "") + "".join(f"[{b}]" for b in bounds)
        if arrays:
            checked = {"text": bool(words) and words[-1] == "char" and not stars}
        else:
            checked = {"ctype": None if tag and stars != 1 else ctype, "struct": tag}
        struct.members[name] = Field(name, self.location(offset), **checked, spelling=spelling, shape=shape,
                                     bit=None if bits == 0 else start, bits=bits or None)


def struct_definitions(definitions, path: str, typedefs=None, pointer_size: int = 8) -> dict[str, StructDef]:
    """The structs and unions of a script's C definitions, by tag."""
    structs: dict[str, StructDef] = {}
    for definition in definitions:
        _Reader(path, typedefs or {}, pointer_size, structs, definition.text, definition.line, definition.column).read()
    return structs
