"""A binary's struct members as probegen.catalog.ctype models them, for script generators
and lint (probegen.dwarf, which reads them, knows no catalog).
"""

from probegen.catalog.ctype import CType, Kind
from probegen.dwarf import model as m
from probegen.errors import InputError
from probegen.generators.cdecl import Planner


def spelling(t: m.Type) -> str:
    """The type as C writes it (a struct defined in place as '{...}')."""
    head, decl, nested = Planner().declarator(t, "")
    return f"{head} {{...}}{decl}" if nested is not None else f"{head} {decl}".rstrip()


def member_ctype(types, struct_name: str, member_path: str) -> CType:
    """Of the member at ``member_path`` ("qid", "id.nsid") in a probegen.dwarf.DwarfTypes; char
    arrays are STRING. probegen.errors.NoSuchMember if there is no such member."""
    member = types.member(struct_name, member_path)
    if member.bit_size is not None:
        raise InputError(f"{struct_name}.{member_path} is a bitfield: scripts cannot read it by address")
    # The name a typedef gives it (under qualifiers: fromdrgn puts all of them in one), else its spelling.
    named = member.type.target if isinstance(member.type, m.Qualified) else member.type
    text = named.name if isinstance(named, m.Typedef) else spelling(member.type)
    u = m.unqualified(member.type)
    if isinstance(u, m.Array):
        element = m.unqualified(u.element)
        if isinstance(element, m.Base) and element.size == 1 and len(u.counts) == 1 and \
                element.encoding in ("signed_char", "unsigned_char"):
            return CType(text, Kind.STRING, u.size or 0, False)
        raise InputError(f"member of array type '{text}' is not supported: scripts print char arrays only")
    if isinstance(u, m.Base):
        if u.encoding == "boolean":
            return CType(text, Kind.BOOL, u.size, False)
        if u.encoding != "float" and u.size in (1, 2, 4, 8):
            return CType(text, Kind.INTEGER, u.size, None if u.name == "char" else u.signed)  # plain char: either sign
        raise InputError(f"member of type '{text}' is not supported: bpftrace cannot print it")
    if isinstance(u, m.Enum):
        return CType(text, Kind.ENUM, u.size, u.signed or None, enum_name=u.name)
    if isinstance(u, m.Pointer):
        target = m.unqualified(u.target)
        kind = Kind.FUNCTION_POINTER if isinstance(target, m.Function) else Kind.POINTER
        if isinstance(target, m.Base) and target.size == 1 and target.encoding in ("signed_char", "unsigned_char"):
            kind = Kind.STRING
        struct_name = target.name if isinstance(target, m.Struct) else None
        return CType(text, kind, u.size, False, pointer_sized=True, struct_name=struct_name)
    raise InputError(f"member of type '{text}' is not supported: scripts print scalars and strings")
