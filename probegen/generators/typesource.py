"""What script generators and lint learn from a built binary's debug info,
in their own terms: enum names, members as probegen.catalog.ctype models
them, and C definitions for bpftrace.

Wraps a probegen.dwarf.DwarfTypes (the reader, which knows no catalog);
the bpftrace and BCC generators take one optionally, so enum names and
struct members come from the binary rather than a hand-kept list.
"""

from __future__ import annotations

from probegen.catalog.ctype import CType, Kind
from probegen.dwarf import DwarfTypes, model as m
from probegen.errors import InputError
from probegen.generators.cdecl import Planner
from probegen.generators.structs import render_definitions


class TypeSource:
    def __init__(self, types: DwarfTypes):
        self.types = types

    def enumerators(self, enum_name: str) -> tuple[m.Enumerator, ...] | None:
        """The enum's enumerators in declaration order, or None if absent."""
        return self.types.enumerators(enum_name)

    def member_ctype(self, struct_name: str, member_path: str) -> CType:
        """Type of ``struct_name``'s member at ``member_path`` ("qid",
        "id.nsid"); char arrays are STRING. probegen.errors.NoSuchMember if
        there is no such member, InputError for other failures."""
        member = self.types.member(struct_name, member_path)
        if member.bit_size is not None:
            raise InputError(f"{struct_name}.{member_path} is a bitfield: scripts cannot read it by address")
        return to_ctype(member.type)

    def member(self, struct_name: str, member_path: str) -> m.Member:
        """The DWARF member at ``member_path``: offset (from the struct's
        start), type, bitfield bits. NoSuchMember if there is none."""
        return self.types.member(struct_name, member_path)

    @property
    def pointer_size(self) -> int:
        return self.types.pointer_size

    def definitions(self, struct_names: list[str]) -> str:
        """C definitions bpftrace 0.17 accepts for these structs and all
        they need, in dependency order."""
        return render_definitions(self.types, list(struct_names))


def spelling(t: m.Type) -> str:
    """The type as C writes it (a struct defined in place as '{...}')."""
    return _spelling(t)


def _spelling(t: m.Type) -> str:
    planner = Planner()
    head, decl, nested = planner.declarator(t, "")
    if nested is not None:
        return f"{head} {{...}}{decl}"
    return f"{head} {decl}".strip() if decl else head


def to_ctype(t: m.Type) -> CType:
    """How probegen.catalog.ctype models a member of this DWARF type."""
    spelling = _spelling(t)
    named = t
    while isinstance(named, m.Qualified):
        named = named.target
    if isinstance(named, m.Typedef):
        spelling = named.name
    u = m.unqualified(t)
    if isinstance(u, m.Array):
        element = m.unqualified(u.element)
        if isinstance(element, m.Base) and element.size == 1 and len(u.counts) == 1 and \
                element.encoding in ("signed_char", "unsigned_char", "UTF"):
            return CType(spelling, Kind.STRING, u.size or 0, False)
        raise InputError(f"member of array type '{spelling}' is not supported: scripts print char arrays only")
    if isinstance(u, m.Base):
        if u.encoding == "boolean":
            return CType(spelling, Kind.BOOL, u.size, False)
        if u.encoding in ("signed", "unsigned", "signed_char", "unsigned_char", "UTF") and u.size in (1, 2, 4, 8):
            signed = None if u.name == "char" else u.signed
            return CType(spelling, Kind.INTEGER, u.size, signed)
        raise InputError(f"member of type '{spelling}' is not supported: bpftrace cannot print it")
    if isinstance(u, m.Enum):
        return CType(spelling, Kind.ENUM, u.size, u.signed or None, enum_name=u.name)
    if isinstance(u, m.Pointer):
        target = m.unqualified(u.target)
        if isinstance(target, m.Function):
            return CType(spelling, Kind.FUNCTION_POINTER, u.size, False, pointer_sized=True)
        if isinstance(target, m.Base) and target.size == 1 and target.encoding in ("signed_char", "unsigned_char"):
            return CType(spelling, Kind.STRING, u.size, False, pointer_sized=True)
        struct_name = target.name if isinstance(target, m.Struct) else None
        return CType(spelling, Kind.POINTER, u.size, False, pointer_sized=True, struct_name=struct_name)
    raise InputError(f"member of type '{spelling}' is not supported: scripts print scalars and strings")
