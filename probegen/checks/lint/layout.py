"""Where a C compiler puts each member of a script's struct copies (where bpftrace reads them),
compared with the binary's DWARF.

The x86-64 System V rules, which bpftrace's targets share for these types: a scalar is aligned
to its size, an array to its element, a struct to its most aligned member and padded to a
multiple of it; a bitfield goes on at the next bit unless it would cross a unit of its type.
After a declaration this cannot size (an unknown typedef, a bound that is no number) no offset
is claimed.
"""

import math
from collections import namedtuple
from dataclasses import dataclass

from probegen.catalog.ctype import CType, Kind, align_up, bit_start
from probegen.dwarf import model as m

_NUMBERS = ("integer", "bool", "enum")
# A Shape's kind for each probegen.catalog.ctype kind: addresses are read alike.
_KINDS = {Kind.INTEGER: "integer", Kind.BOOL: "bool", Kind.ENUM: "enum", Kind.FLOAT: "float",
          Kind.STRING: "pointer", Kind.POINTER: "pointer", Kind.FUNCTION_POINTER: "pointer"}

# A member's type as far as layout and comparison need it. kind: "integer", "bool", "enum",
# "pointer", "array", "struct" or "float"; signed: of an integer, None for plain char (either
# sign); struct: a struct's tag, or the one a pointer points to; element, count: of an array.
Shape = namedtuple("Shape", "kind size align signed struct element count", defaults=(None, None, None, 0))


def scalar(ctype: CType | None, pointer_size: int) -> Shape | None:
    if ctype is None:
        return None
    size = ctype.size_on(pointer_size)
    signed = ctype.signed if ctype.kind is Kind.INTEGER else None
    return Shape(_KINDS[ctype.kind], size, size, signed, ctype.struct_name)


def array(element: Shape, bounds) -> Shape:
    count = math.prod(bound or 0 for bound in bounds)
    return Shape("array", element.size * count, element.align, element=element, count=count)


@dataclass
class Layout:
    union: bool
    packed: bool = False  # __attribute__((packed)) on the struct
    align: int = 1  # the most aligned member's, or the struct's __attribute__((aligned(N)))
    end: int = 0  # bits used (a struct's next member goes on from there)
    complete: bool = True  # every declaration so far was laid out

    def shape(self, tag: str | None) -> Shape | None:
        size = align_up(align_up(self.end, 8) // 8, self.align)
        return Shape("struct", size, self.align, struct=tag) if self.complete else None

    def place(self, shape: Shape | None, bits: int | None = None, packed=False, aligned: int | None = None):
        """The bit the next member starts at, or None once the layout is not known."""
        packed = packed or self.packed
        # A bitfield is laid out only of a number, and not packed.
        self.complete &= shape is not None and (bits is None or shape.kind in _NUMBERS and not packed)
        if not self.complete:
            return None
        member_align = max(1 if packed else shape.align, aligned or 0)
        start = 0 if self.union else self.end
        start = align_up(start, member_align * 8) if bits is None else bit_start(start, shape.size * 8, bits)
        self.align = max(self.align, member_align)
        self.end = max(self.end, start + (shape.size * 8 if bits is None else bits))
        return start


def dwarf_shape(t) -> Shape:
    """A probegen.dwarf.model type as a Shape."""
    u = m.unqualified(t)
    size = u.size or 0
    if isinstance(u, m.Base):
        kind = {"boolean": "bool", "float": "float", "complex_float": "float"}.get(u.encoding, "integer")
        return Shape(kind, size, size, signed=None if kind != "integer" or u.name == "char" else u.signed)
    if isinstance(u, m.Enum):
        return Shape("enum", size, size)
    if isinstance(u, m.Pointer):
        target = m.unqualified(u.target)
        return Shape("pointer", size, size, struct=target.name if isinstance(target, m.Struct) else None)
    if isinstance(u, m.Array):
        return array(dwarf_shape(u.element), u.counts)._replace(size=size)
    if isinstance(u, m.Struct):
        return Shape("struct", size, 1, struct=u.name)
    return Shape("void", size, 1)


def _same_type(copy: Shape, binary: Shape) -> bool:
    """Whether reading the copy's type gives the binary's value. Numbers of one size read alike (an
    enum's sign is the compiler's choice), so do a pointer and an integer (hand copies keep pointers as u64)."""
    kinds = {copy.kind, binary.kind}
    if copy.size != binary.size or len(kinds) > 1 and not (kinds <= {*_NUMBERS} or kinds == {"pointer", "integer"}):
        return False
    if kinds == {"array"}:
        return copy.count == binary.count and _same_type(copy.element, binary.element)
    # Only integers have a sign (None: plain char's, either), only pointers and structs a tag (None: not known).
    return len({copy.signed, binary.signed} - {None}) < 2 and len({copy.struct, binary.struct} - {None}) < 2


def _size(bits: int | None, size: int) -> str:
    return f"{bits} bits" if bits else f"{size} byte{'s' if size != 1 else ''}"


def mismatch(copy, member, binary_spelling: str, where: str) -> str | None:
    """What differs between the copy's member (a probegen.checks.lint.cdefs.Field)
    and the binary's (a probegen.dwarf.model.Member), or None."""
    shape = dwarf_shape(member.type)
    copy_at = f"bit {copy.bit}" if copy.bits else f"offset {copy.bit // 8}"
    binary_at = f"bit {member.bit_offset}" if member.bit_size else f"offset {member.offset}"
    copy_size, binary_size = _size(copy.bits, copy.shape.size), _size(member.bit_size, shape.size)
    retyped = not (copy.bits or member.bit_size) and copy_size == binary_size and not _same_type(copy.shape, shape)
    what = [word for word, flag in (("moved", copy_at != binary_at), ("resized", copy_size != binary_size),
                                    ("retyped", retyped)) if flag]
    if not what:
        return None
    return (f"the copy has {copy.spelling} ({copy_size}) at {copy_at}, {where} has {binary_spelling} "
            f"({binary_size}) at {binary_at} ({', '.join(what)}: bpftrace would read other bytes)")
