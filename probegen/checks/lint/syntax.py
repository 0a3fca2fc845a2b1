"""The small AST the lint parser builds: only what the checks need.

Every node knows its line and column (1-based) in the script, so a
finding points at the token that is wrong.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Node:
    line: int
    column: int


# -- expressions ----------------------------------------------------------
@dataclass(frozen=True)
class Int(Node):
    text: str


@dataclass(frozen=True)
class Str(Node):
    raw: str  # between the quotes, escapes as written


@dataclass(frozen=True)
class Ident(Node):
    """A builtin (arg1, pid, comm), or a name bpftrace resolves later."""
    name: str


@dataclass(frozen=True)
class Var(Node):
    name: str  # with the '$'


@dataclass(frozen=True)
class Positional(Node):
    name: str  # $1, $#


@dataclass(frozen=True)
class Map(Node):
    name: str  # with the '@'
    keys: tuple = ()


@dataclass(frozen=True)
class Call(Node):
    name: str
    args: tuple = ()


@dataclass(frozen=True)
class Cast(Node):
    type_text: str  # "struct spdk_nvmf_qpair *", "uint32"
    struct_name: str | None  # for struct/union casts
    pointer: bool
    operand: object


@dataclass(frozen=True)
class Member(Node):
    """``base->name`` or ``base.name``; the position is the member name's."""
    base: object
    name: str
    arrow: bool


@dataclass(frozen=True)
class Index(Node):
    base: object
    index: object


@dataclass(frozen=True)
class Unary(Node):
    op: str
    operand: object


@dataclass(frozen=True)
class Binary(Node):
    op: str
    left: object
    right: object


@dataclass(frozen=True)
class Ternary(Node):
    condition: object
    then: object
    otherwise: object


@dataclass(frozen=True)
class Tuple(Node):
    items: tuple


@dataclass(frozen=True)
class Opaque(Node):
    """Something parsed only far enough to skip it (sizeof(struct x))."""
    text: str


# -- statements -------------------------------------------------------------
@dataclass(frozen=True)
class ExprStatement(Node):
    expr: object


@dataclass(frozen=True)
class Assign(Node):
    target: object  # Var or Map
    op: str  # "=", "+=", ...
    value: object


@dataclass(frozen=True)
class If(Node):
    condition: object
    then: tuple
    otherwise: tuple = ()


@dataclass(frozen=True)
class Loop(Node):
    """``unroll (n) { }`` and ``while (cond) { }``."""
    keyword: str
    condition: object
    body: tuple


@dataclass(frozen=True)
class Jump(Node):
    keyword: str  # return, break, continue


# -- top level --------------------------------------------------------------
@dataclass(frozen=True)
class AttachPoint(Node):
    text: str

    @property
    def fields(self) -> list[tuple[str, int]]:
        """The ':'-separated fields with their columns; quotes kept out of
        the splitting (``uprobe:"/a:b":f``)."""
        fields, start, quoted = [], 0, False
        for index, char in enumerate(self.text + ":"):
            if char == '"':
                quoted = not quoted
            elif char == ":" and not quoted:
                fields.append((self.text[start:index].strip('"'), self.column + start))
                start = index + 1
        return fields


@dataclass(frozen=True)
class CDefinition(Node):
    text: str


@dataclass(frozen=True)
class ProbeBlock(Node):
    attach_points: tuple[AttachPoint, ...]
    predicate: object | None
    body: tuple


@dataclass
class Script:
    path: str
    blocks: list[ProbeBlock] = field(default_factory=list)
    definitions: list[CDefinition] = field(default_factory=list)
    preprocessor: list[str] = field(default_factory=list)


# Blocks, parentheses and operators nested in one another, at most. The
# parser and the checker walk the nesting by recursion; bpftrace 0.17
# itself takes thousands, real scripts a handful.
MAX_NESTING = 500
# Python frames the parser and the checker spend per level, at most.
_FRAMES_PER_LEVEL = 8


@contextmanager
def room_for_nesting():
    """Raise Python's recursion limit, for this call, to what walking a
    script nested MAX_NESTING deep takes (Python-to-Python calls: since
    3.11 they do not grow the C stack; before, ~5,000 fit in 8 MB)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, MAX_NESTING * _FRAMES_PER_LEVEL + 1000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)
