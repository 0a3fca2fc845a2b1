"""Member names (and, where it is plain, types) of the structs a script
defines at its top, so casts like ``((struct x *)arg1)->name`` can be
checked without a binary.

Only declarations are read, not evaluated: a member whose type this does
not understand is still known to exist, just with an unknown type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from probegen.ctypes import CType, CTypeError, parse_ctype
from probegen.errors import Location

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_AGGREGATE = re.compile(r"\b(struct|union)\s+([A-Za-z_]\w*)?\s*\{")
_FUNCTION_POINTER = re.compile(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)")
_DECLARATOR = re.compile(
    r"(?P<base>.*?)(?P<stars>[\s*]*)\b(?P<name>[A-Za-z_]\w*)\s*(?P<arrays>(?:\[[^\]]*\]\s*)*)(?::\s*\w+)?\s*\Z",
    re.S,
)
_QUALIFIERS = {"const", "volatile", "restrict"}


@dataclass(frozen=True)
class MemberInfo:
    ctype: CType | None = None
    text: bool = False  # a char array: bpftrace prints it with %s as is
    struct: str | None = None  # the struct it points to or holds
    location: Location | None = None  # of the member's declaration


@dataclass
class StructDef:
    name: str
    location: Location
    members: dict[str, MemberInfo] = field(default_factory=dict)


def _matching_brace(text: str, open_index: int) -> int:
    depth = 0
    for index in range(open_index, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return index
    return len(text)


def _split_top_level(body: str, separator: str) -> list[tuple[int, str]]:
    """Parts between separators outside brackets: (offset of the part's
    first non-blank character, stripped text)."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(body + separator):
        if char in "{([":
            depth += 1
        elif char in "})]":
            depth -= 1
        elif char == separator and depth == 0 or index == len(body):
            part = body[start:index]
            if part.strip():
                parts.append((start + len(part) - len(part.lstrip()), part.strip()))
            start = index + 1
    return parts


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
        self.text = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
        self.line, self.column = line, column
        self.structs: dict[str, StructDef] = {}

    def location(self, offset: int) -> Location:
        line = self.line + self.text.count("\n", 0, offset)
        start = self.text.rfind("\n", 0, offset)
        column = self.column + offset if start < 0 else offset - start
        return Location(self.path, line, column)

    def read(self):
        pos = 0
        while True:
            match = _AGGREGATE.search(self.text, pos)
            if not match:
                return
            close = _matching_brace(self.text, match.end() - 1)
            self.aggregate(match, close)
            pos = close + 1

    def aggregate(self, match, close) -> dict[str, MemberInfo]:
        """Members of the struct whose '{' ends ``match``, registered under
        its tag if it has one."""
        members: dict[str, MemberInfo] = {}
        for offset, declaration in _split_top_level(self.text[match.end():close], ";"):
            self.declaration(match.end() + offset, declaration, members)
        if match.group(2):
            self.structs[match.group(2)] = StructDef(match.group(2), self.location(match.start()), members)
        return members

    def declaration(self, offset: int, declaration: str, members: dict[str, MemberInfo]):
        nested = _AGGREGATE.match(self.text, offset)
        if nested:
            close = _matching_brace(self.text, nested.end() - 1)
            inner_members = self.aggregate(nested, close)
            tail_start = close + 1
            names = _split_top_level(self.text[tail_start:offset + len(declaration)], ",")
            if not names:  # anonymous: its members are the outer struct's
                members.update(inner_members)
            for name_offset, name in names:
                found = re.match(r"[\s*]*([A-Za-z_]\w*)", name)
                if found:
                    members[found.group(1)] = MemberInfo(
                        struct=nested.group(2), location=self.location(tail_start + name_offset))
            return
        pointer = _FUNCTION_POINTER.search(declaration)
        if pointer:
            members[pointer.group(1)] = MemberInfo(location=self.location(offset + pointer.start(1)))
            return
        base = None
        for index, (part_offset, declarator) in enumerate(_split_top_level(declaration, ",")):
            prefix = ""
            if index == 0:
                match = _DECLARATOR.match(declarator)
                if not match:
                    return
                base = match["base"]
            else:
                prefix = "x "
                match = _DECLARATOR.match(prefix + declarator)
                if not match:
                    continue
            where = self.location(offset + part_offset + match.start("name") - len(prefix))
            members[match["name"]] = _member_info(
                base, match["stars"].count("*"), match["arrays"].strip(), self.typedefs, where)


def struct_definitions(definitions, path: str, typedefs=None) -> dict[str, StructDef]:
    """Structs and unions defined in a script's C definitions, by tag."""
    structs: dict[str, StructDef] = {}
    for definition in definitions:
        reader = _Reader(path, typedefs or {}, definition.text, definition.line, definition.column)
        reader.read()
        structs.update(reader.structs)
    return structs
