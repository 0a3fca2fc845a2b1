"""C types as DWARF describes them, independent of how they are printed.

Loaded from DIEs by ``probegen.dwarf.load``; written as C by
``probegen.generators.cdecl``. Objects are shared: a type reached twice is the
same object, so recursive structs (through pointers) terminate.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class Type:
    """Base of all types. Every type has ``size`` in bytes (None where C
    has none, such as void and functions)."""


@dataclass(eq=False)
class Void(Type):
    size: int | None = None


@dataclass(eq=False)
class Base(Type):
    name: str  # as C writes it: "unsigned int", "_Bool"
    size: int
    encoding: str  # "signed", "unsigned", "signed_char", "unsigned_char", "boolean", "float", ...

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
    declaration: bool = False  # only declared here: no enumerators known
    die_offset: int = -1
    source_name: str | None = None  # DWARF's name where it is no C name ("Color" of "ns::Color")


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
    declaration: bool = False  # incomplete: only "struct name;" is known
    typedef_name: bool = False  # anonymous, named here after its typedef
    die_offset: int = -1
    source_name: str | None = None  # DWARF's name where it is no C name ("Box<int>")

    @property
    def spelling(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(eq=False)
class Typedef(Type):
    name: str
    target: Type

    @property
    def size(self):  # type: ignore[override]
        return self.target.size


@dataclass(eq=False)
class Pointer(Type):
    target: Type
    size: int = 8


@dataclass(eq=False)
class Qualified(Type):
    qualifiers: tuple[str, ...]  # subset of ("const", "volatile", "restrict"), in that order
    target: Type

    @property
    def size(self):  # type: ignore[override]
        return self.target.size


@dataclass(eq=False)
class Array(Type):
    element: Type
    counts: list[int | None]  # outermost first; None: flexible (no bound)

    @property
    def size(self):  # type: ignore[override]
        total = self.element.size
        for count in self.counts:
            if count is None or total is None:
                return 0 if count is None else None
            total *= count
        return total


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



def shape(t: Type) -> tuple:
    """What C would write for ``t``, as a value: equal for two compilation
    units' copies of one type. Typedefs are looked through (bpftrace's C
    has none); a named struct reached through a pointer is only its name."""
    memo: dict[tuple[int, bool], tuple] = {}

    def of(t: Type, by_value: bool = True) -> tuple:
        t = strip_typedefs(t)
        if isinstance(t, Qualified):
            return "qualified", t.qualifiers, of(t.target, by_value)
        if isinstance(t, Pointer):
            return "pointer", t.size, of(t.target, False)
        if isinstance(t, Array):
            return "array", tuple(t.counts), of(t.element, by_value)
        if isinstance(t, Function):
            return "function", of(t.returns, False), tuple(of(p, False) for p in t.params), t.varargs, t.prototyped
        if isinstance(t, Enum):
            return "enum", t.name, t.source_name, t.size, t.signed, tuple((e.name, e.value) for e in t.enumerators)
        if isinstance(t, Base):
            return "base", t.name, t.size, t.encoding
        if not isinstance(t, Struct):
            return ("void",)
        if t.name is not None and not by_value:
            return t.kind, t.name
        key = (id(t), by_value)
        if key not in memo:
            memo[key] = (t.kind, t.name)  # while it is described: damaged DWARF may loop
            members = tuple((mb.name, mb.offset, mb.bit_size, mb.bit_offset, of(mb.type, by_value)) for mb in t.members)
            memo[key] = (t.kind, t.name, t.source_name, t.size, t.alignment, t.declaration, t.typedef_name, members)
        return memo[key]

    return of(t)
