"""Where a C compiler puts each member of a script's struct copies: the
offsets bpftrace (through clang) reads them at, for comparing with the
binary's DWARF.

x86-64 System V rules, which bpftrace's targets share for these types: a
scalar is aligned to its size, an array to its element, a struct to its
most aligned member and padded to a multiple of it; a union's members all
start at 0; a bitfield goes on at the next bit unless it would cross a
unit of its type; ``packed`` aligns to 1 and ``aligned(N)`` raises the
alignment. A declaration this cannot size (an unknown typedef, a bound
that is no number) ends the layout: no offset after it is claimed.
"""

from __future__ import annotations

from collections import namedtuple

from probegen.catalog.ctype import CTypeError, Kind, parse_ctype
from probegen.checks.lint.cdefs import Field, StructDef

# Structs by value inside structs, at most (a copy holding itself is refused by C anyway).
MAX_DEPTH = 32
_INTEGER_WORDS = {"signed", "unsigned", "short", "long", "int", "char"}
_NUMBERS = ("integer", "bool", "enum")
_KINDS = {Kind.BOOL: "bool", Kind.ENUM: "enum", Kind.INTEGER: "integer"}


# A member's type as far as layout and comparison need it. kind: "integer", "bool",
# "enum", "pointer", "array", "struct" or "float"; signed: of an integer, None for plain
# char (either sign); struct: a struct's tag, or the struct a pointer points to;
# element and count (all bounds multiplied): of an array.
Shape = namedtuple("Shape", "kind size align signed struct element count", defaults=(None, None, None, 0))
# Where a member of the copy is: its byte offset, and a bitfield's bit offset (from the
# struct's start) and width; spelling: its type as the copy writes it.
Placed = namedtuple("Placed", "offset shape bit_offset bits spelling", defaults=(None, None, ""))
# complete: every declaration was laid out.
Layout = namedtuple("Layout", "size align members complete")
_UNKNOWN = Layout(0, 1, {}, False)


def _c_order(words: list[str]) -> str:
    """An integer type in the order probegen's C types spell it: gcc's
    DWARF (and so pahole and probegen structs) writes "short unsigned int"."""
    if not words or not set(words) <= _INTEGER_WORDS:
        return " ".join(words)
    sign = [w for w in ("signed", "unsigned") if w in words]
    size = [w for w in words if w in ("short", "long", "char")]
    return " ".join(sign + size + (["int"] if "char" not in words else []))


def _spelling(decl: Field) -> str:
    if decl.function_pointer:
        return "a function pointer"
    base = decl.base if decl.inner is None else f"{decl.inner.kind} {decl.inner.name or '{...}'}"
    bounds = "".join(f"[{b}]" for b in decl.bounds or ())
    return f"{base}{' ' + '*' * decl.stars if decl.stars else ''}{bounds}"


def _align_up(value: int, align: int) -> int:
    return (value + align - 1) // align * align


def _array(element: Shape, bounds) -> Shape:
    count = 1
    for bound in bounds:
        count *= bound or 0
    return Shape("array", element.size * count, element.align, element=element, count=count)


class _Planner:
    def __init__(self, structs: dict[str, StructDef], typedefs, pointer_size: int):
        self.structs, self.typedefs, self.pointer_size = structs, typedefs or {}, pointer_size
        self.layouts: dict[int, Layout] = {}
        self.depth = 0

    def shape(self, decl: Field) -> Shape | None:
        """The declared type of ``decl``, or None if it cannot be sized."""
        words = decl.base.split()
        if decl.function_pointer:
            return Shape("pointer", self.pointer_size, self.pointer_size)
        if decl.inner is not None:
            base = self.struct_shape(decl.inner)
        elif decl.stars:
            struct = words[1] if decl.stars == 1 and len(words) == 2 and words[0] in ("struct", "union") else None
            base = Shape("pointer", self.pointer_size, self.pointer_size, struct=struct)
        elif len(words) == 2 and words[0] in ("struct", "union"):
            base = self.struct_shape(self.structs.get(words[1]))
        elif words in (["float"], ["double"]):  # laid out, never printed
            base = Shape("float", 4 if words == ["float"] else 8, 4 if words == ["float"] else 8)
        else:
            base = self.scalar_shape(words)
        if base is None or decl.bounds is None:
            return None
        return _array(base, decl.bounds) if decl.bounds else base

    def struct_shape(self, struct: StructDef | None) -> Shape | None:
        inner = _UNKNOWN if struct is None else self.layout(struct)
        return Shape("struct", inner.size, inner.align, struct=struct.name) if inner.complete else None

    def scalar_shape(self, words: list[str]) -> Shape | None:
        try:
            ctype = parse_ctype(_c_order(words), self.typedefs)
        except CTypeError:
            return None
        size = ctype.size_on(self.pointer_size)
        if ctype.kind in _KINDS:
            return Shape(_KINDS[ctype.kind], size, size, signed=ctype.signed if ctype.kind is Kind.INTEGER else None)
        if ctype.is_address:
            return Shape("pointer", size, size, struct=ctype.struct_name)
        return None

    def layout(self, struct: StructDef) -> Layout:
        if id(struct) in self.layouts:
            return self.layouts[id(struct)]
        if self.depth >= MAX_DEPTH:
            return _UNKNOWN
        self.depth += 1
        self.layouts[id(struct)] = _UNKNOWN  # while it is laid out: a copy holding itself
        try:
            self.layouts[id(struct)] = self.lay_out(struct)
        finally:
            self.depth -= 1
        return self.layouts[id(struct)]

    def lay_out(self, struct: StructDef) -> Layout:
        union = struct.kind == "union"
        members: dict[str, Placed] = {}
        bit = size = 0  # next free bit; bits used
        align = 1
        for decl in struct.fields:
            shape = self.shape(decl) if decl.understood else None
            if shape is None:
                return Layout(0, 1, members, False)
            member_align = max(1 if decl.packed or struct.packed else shape.align, decl.aligned or 0)
            start = 0 if union else bit
            if decl.bits is not None:
                if shape.kind not in _NUMBERS or decl.packed or struct.packed:
                    return Layout(0, 1, members, False)
                unit = shape.size * 8
                if decl.bits == 0 or start // unit != (start + decl.bits - 1) // unit:
                    start = _align_up(start, unit)
                if decl.name is not None and decl.bits:
                    members[decl.name] = Placed(start // 8, shape, start, decl.bits, _spelling(decl))
                end = start + decl.bits
                if decl.name is not None:
                    align = max(align, member_align)
            else:
                start = _align_up(start, member_align * 8)
                align = max(align, member_align)
                if decl.name is not None:
                    members[decl.name] = Placed(start // 8, shape, spelling=_spelling(decl))
                else:  # anonymous: its members are ours, moved here
                    for name, placed in self.layout(decl.inner).members.items():
                        members[name] = Placed(placed.offset + start // 8, placed.shape,
                                               None if placed.bit_offset is None else placed.bit_offset + start,
                                               placed.bits, placed.spelling)
                end = start + shape.size * 8
            bit = bit if union else end
            size = max(size, end) if union else end
        return Layout(_align_up(_align_up(size, 8) // 8, align), align, members, True)


def layouts(structs: dict[str, StructDef], typedefs=None, pointer_size: int = 8) -> dict[str, Layout]:
    """The layout of each of the script's structs, by tag."""
    planner = _Planner(structs, typedefs, pointer_size)
    return {name: planner.layout(struct) for name, struct in structs.items()}


def dwarf_shape(t) -> Shape:
    """A probegen.dwarf.model type as a Shape (only what comparing needs)."""
    from probegen.dwarf import model as m

    u = m.unqualified(t)
    size = u.size or 0
    if isinstance(u, m.Base):
        if u.encoding == "boolean":
            return Shape("bool", size, size)
        if u.encoding in ("float", "complex_float"):
            return Shape("float", size, size)
        return Shape("integer", size, size, signed=None if u.name == "char" else u.signed)
    if isinstance(u, m.Enum):
        return Shape("enum", size, size)
    if isinstance(u, m.Pointer):
        target = m.unqualified(u.target)
        return Shape("pointer", size, size, struct=target.name if isinstance(target, m.Struct) else None)
    if isinstance(u, m.Array):
        element = dwarf_shape(u.element)
        count = 1
        for bound in u.counts:
            count *= bound or 0
        return Shape("array", size, element.align, element=element, count=count)
    if isinstance(u, m.Struct):
        return Shape("struct", size, 1, struct=u.name)
    return Shape("void", size, 1)


def _same_type(copy: Shape, binary: Shape) -> bool:
    """Whether reading the copy's type gives the binary's value. Integer,
    bool and enum of one size read alike (enums' sign is the compiler's
    choice); so do a pointer and an integer of its size (hand copies keep
    pointers they do not follow as u64); a pointer to a struct must point
    to the same struct; arrays must agree element by element."""
    if copy.size != binary.size:
        return False
    if copy.kind in _NUMBERS and binary.kind in _NUMBERS:
        if copy.kind == binary.kind == "integer" and None not in (copy.signed, binary.signed):
            return copy.signed == binary.signed
        return True
    if {copy.kind, binary.kind} == {"pointer", "integer"}:
        return True
    if copy.kind != binary.kind:
        return False
    if copy.kind in ("pointer", "struct"):
        return None in (copy.struct, binary.struct) or copy.struct == binary.struct
    if copy.kind == "array":
        return copy.count == binary.count and _same_type(copy.element, binary.element)
    return True


def mismatch(placed: Placed, member, binary_spelling: str, where: str) -> str | None:
    """What differs between the copy's member and the binary's
    (probegen.dwarf.model.Member), as a message tail, or None."""
    shape = dwarf_shape(member.type)
    if placed.bits is not None or member.bit_size is not None:
        copy_at, binary_at = (f"bit {placed.bit_offset}" if placed.bits else f"offset {placed.offset}",
                              f"bit {member.bit_offset}" if member.bit_size else f"offset {member.offset}")
        copy_size = f"{placed.bits} bits" if placed.bits else f"{placed.shape.size} bytes"
        binary_size = f"{member.bit_size} bits" if member.bit_size else f"{shape.size} bytes"
        moved, resized = copy_at != binary_at, copy_size != binary_size
        retyped = False
    else:
        copy_at, binary_at = f"offset {placed.offset}", f"offset {member.offset}"
        copy_size, binary_size = f"{placed.shape.size} byte{'s' if placed.shape.size != 1 else ''}", \
            f"{shape.size} byte{'s' if shape.size != 1 else ''}"
        moved, resized = placed.offset != member.offset, placed.shape.size != shape.size
        retyped = not resized and not _same_type(placed.shape, shape)
    what = [word for word, flag in (("moved", moved), ("resized", resized), ("retyped", retyped)) if flag]
    if not what:
        return None
    return (f"the copy has {placed.spelling} ({copy_size}) at {copy_at}, {where} has {binary_spelling} "
            f"({binary_size}) at {binary_at} ({', '.join(what)}: bpftrace would read other bytes)")
