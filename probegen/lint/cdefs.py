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


def _split_top_level(body: str, separator: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for index, char in enumerate(body):
        if char in "{([":
            depth += 1
        elif char in "})]":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(body[start:index])
            start = index + 1
    parts.append(body[start:])
    return [p.strip() for p in parts if p.strip()]


def _member_info(base: str, stars: int, arrays: str, typedefs) -> MemberInfo:
    words = [w for w in base.split() if w not in _QUALIFIERS]
    struct = words[1] if len(words) == 2 and words[0] in ("struct", "union") else None
    if arrays:
        is_char = words and words[-1] == "char" and not stars
        return MemberInfo(text=bool(is_char))
    if struct:
        spelling = " ".join(words) + " " + "*" * stars if stars else None
        ctype = None
        if stars == 1:
            ctype = parse_ctype(spelling)
        return MemberInfo(ctype=ctype, struct=struct)
    try:
        return MemberInfo(ctype=parse_ctype(" ".join(words) + (" " + "*" * stars if stars else ""), typedefs))
    except CTypeError:
        return MemberInfo()


class _Reader:
    def __init__(self, path: str, typedefs):
        self.path = path
        self.typedefs = typedefs
        self.structs: dict[str, StructDef] = {}

    def read(self, text: str, line: int, column: int):
        text = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
        pos = 0
        while True:
            match = _AGGREGATE.search(text, pos)
            if not match:
                return
            close = _matching_brace(text, match.end() - 1)
            self.aggregate(text, match, close, line, column)
            pos = close + 1

    def aggregate(self, text, match, close, line, column) -> dict[str, MemberInfo]:
        """Members of the struct whose '{' ends ``match``, registered under
        its tag if it has one."""
        members: dict[str, MemberInfo] = {}
        body = text[match.end():close]
        for declaration in _split_top_level(body, ";"):
            self.declaration(declaration, members)
        if match.group(2):
            offset = match.start()
            at_line = line + text.count("\n", 0, offset)
            at_column = (column + offset) if at_line == line else offset - text.rfind("\n", 0, offset)
            self.structs[match.group(2)] = StructDef(
                match.group(2), Location(self.path, at_line, at_column), members)
        return members

    def declaration(self, declaration: str, members: dict[str, MemberInfo]):
        nested = _AGGREGATE.match(declaration)
        if nested:
            close = _matching_brace(declaration, nested.end() - 1)
            inner = _Reader(self.path, self.typedefs)
            inner_members = inner.aggregate(declaration, nested, close, 0, 0)
            self.structs.update(inner.structs)
            names = _split_top_level(declaration[close + 1:], ",")
            if not names:  # anonymous: its members are the outer struct's
                members.update(inner_members)
            for name in names:
                found = re.search(r"([A-Za-z_]\w*)\s*(\[.*)?\Z", name)
                if found:
                    members[found.group(1)] = MemberInfo(struct=nested.group(2))
            return
        pointer = _FUNCTION_POINTER.search(declaration)
        if pointer:
            members[pointer.group(1)] = MemberInfo()
            return
        base = None
        for index, declarator in enumerate(_split_top_level(declaration, ",")):
            if index == 0:
                match = _DECLARATOR.match(declarator)
                if not match:
                    return
                base = match["base"]
            else:
                match = _DECLARATOR.match("x " + declarator)
                if not match:
                    continue
            members[match["name"]] = _member_info(
                base, match["stars"].count("*"), match["arrays"].strip(), self.typedefs)


def struct_definitions(definitions, path: str, typedefs=None) -> dict[str, StructDef]:
    """Structs and unions defined in a script's C definitions, by tag."""
    reader = _Reader(path, typedefs or {})
    for definition in definitions:
        reader.read(definition.text, definition.line, definition.column)
    return reader.structs
