"""C types as DWARF describes them (made by fromdrgn.py, written as C by
generators/cdecl.py). A type reached twice by name is one object, so
recursive structs (through pointers) end.
"""

import math
from dataclasses import dataclass, field


class Type:
    """Every type has ``size`` in bytes (None for void and functions)."""


@dataclass(eq=False)
class Void(Type):
    size: int | None = None


@dataclass(eq=False)
class Base(Type):
    name: str  # as C writes it: "unsigned int", "_Bool"
    size: int
    encoding: str  # "signed", "unsigned", "signed_char", "unsigned_char", "boolean", "float"

    @property
    def signed(self) -> bool:
        return self.encoding in ("signed", "signed_char")


@dataclass(eq=False)
class Enumerator:
    name: str
    value: int


@dataclass(eq=False)
class Enum(Type):
    name: str | None
    size: int
    enumerators: list[Enumerator] = field(default_factory=list)
    signed: bool = False
    source_name: str | None = None  # DWARF's name where it is no C name ("ns::Color")
    kind = "enum"  # as a Struct's kind (not a field)


@dataclass(eq=False)
class Member:
    name: str | None  # None: an anonymous struct or union member
    type: Type
    offset: int  # bytes from the start of the enclosing struct
    bit_size: int | None = None  # set for bitfields
    bit_offset: int | None = None  # for bitfields: bits from the start of the struct


@dataclass(eq=False)
class Struct(Type):
    kind: str  # "struct" or "union"
    name: str | None
    size: int | None
    members: list[Member] = field(default_factory=list)
    alignment: int | None = None  # DW_AT_alignment: explicitly over-aligned
    typedef_name: bool = False  # anonymous, named here after its typedef
    source_name: str | None = None  # DWARF's name where it is no C name ("Box<int>")


class _Alias(Type):
    """A typedef or qualifiers: the size of its target."""

    @property
    def size(self):
        return self.target.size


@dataclass(eq=False)
class Typedef(_Alias):
    name: str
    target: Type


@dataclass(eq=False)
class Pointer(Type):
    target: Type
    size: int = 8


@dataclass(eq=False)
class Qualified(_Alias):
    qualifiers: tuple[str, ...]  # of "const", "volatile", "restrict", "_Atomic", in that order
    target: Type


@dataclass(eq=False)
class Array(Type):
    element: Type
    counts: list[int | None]  # outermost first; None: flexible (no bound)

    @property
    def size(self):  # type: ignore[override]
        if self.counts[0] is None:  # only the outermost may be flexible
            return 0
        return None if self.element.size is None else math.prod(self.counts) * self.element.size


@dataclass(eq=False)
class Function(Type):
    returns: Type
    params: list[Type]
    varargs: bool = False
    prototyped: bool = True
    size: int | None = None


def strip_typedefs(t: Type) -> Type:
    """The type under any typedefs (qualifiers kept)."""
    while isinstance(t, Typedef):
        t = t.target
    return t


def unqualified(t: Type) -> Type:
    """The type under any typedefs and qualifiers."""
    while isinstance(t, (Typedef, Qualified)):
        t = t.target
    return t
