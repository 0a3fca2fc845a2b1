"""The line a hit prints, ``SECONDS.MICROSECONDS: PROBE name=value ...``, decided
once for bpftrace scripts and BCC tools alike: which fields, in which order, each
styled how, so the two tools cannot drift apart.
"""

import enum
from collections import namedtuple
from dataclasses import dataclass
from typing import TYPE_CHECKING

from probegen.bpftrace import DEFAULT_MAX_LEN, cut_literal
from probegen.catalog.model import MAX_NAMED_ENUMS, Arg, Catalog, Probe, enum_names
from probegen.catalog.ctype import CType, Kind
from probegen.errors import InputError
from probegen.generators.escape import c_string

if TYPE_CHECKING:
    from probegen.dwarf.types import DwarfTypes

UNKNOWN_ENUM = "UNKNOWN"  # printed, with the number, for a value its enum has no name for
CONTINUED = " +"  # opens each part but the first of a hit printed in parts ("PROBE [tid TID K/N] +...")


class Style(enum.Enum):
    SIGNED = "signed"  # decimal integer, sign-extended from its width
    UNSIGNED = "unsigned"  # decimal integer, zero-extended
    HEX = "hex"  # 0x..., the value's bits at its width
    POINTER = "pointer"  # %p: 0x... or (nil)
    STRING = "string"  # NUL-terminated, at most max_len characters
    ENUM = "enum"  # the enumerator's name, or UNKNOWN(number)


# The names an enum's values print as: names, (value, display name) with strip_prefix applied, values
# unique; signed: a value is negative (the note records it as signed).
EnumTable = namedtuple("EnumTable", "name names signed")


@dataclass(frozen=True)
class Field:
    label: str  # "qid", "ticks", "qpair->qid"
    style: Style
    index: int  # N of argN holding the value (or the struct pointer)
    ctype: CType  # the value's type (the member's, for a member field)
    max_len: int = DEFAULT_MAX_LEN  # most characters a string prints
    enum: EnumTable | None = None
    struct: str | None = None  # a member field: what the pointer points to, "struct NAME" or "union NAME"
    member: str | None = None  # ... and the member path in it
    length: int | None = None  # a string that is not NUL-terminated: N of argN holding its length

    @property
    def size(self) -> int:  # as the note (or the struct) carries it
        return self.ctype.size_on(8)

    @property
    def is_member(self) -> bool:
        return self.member is not None


@dataclass(frozen=True)
class ProbeLine:
    probe: Probe
    fields: tuple[Field, ...]
    arg_count: int  # arguments in the note (arg0 included)
    tid: bool = False  # "PROBE [tid TID] ...": the thread too (for probegen trace's own reading)


def enum_table(catalog: Catalog, enum_name: str, types: "DwarfTypes | None") -> EnumTable | None:
    """Names from the binary's DWARF when known, else from the catalog."""
    decl = catalog.enum(enum_name)
    enumerators = (types.enumerators(enum_name) if types is not None else None) or (decl.enumerators if decl else ())
    if not enumerators:
        return None
    names = enum_names(enumerators, decl.strip_prefix if decl else "")
    return EnumTable(enum_name, tuple(names.items()), any(v < 0 for v in names))


_KIND_STYLES = {Kind.STRING: Style.STRING, Kind.POINTER: Style.POINTER, Kind.FUNCTION_POINTER: Style.POINTER,
                Kind.ENUM: Style.ENUM}  # integers and bools by their sign


def style_of(ctype: CType, hex_: bool = False) -> Style:
    """How both tools print a value of this type."""
    return Style.HEX if hex_ else _KIND_STYLES.get(ctype.kind, Style.SIGNED if ctype.signed_on_x86 else Style.UNSIGNED)


def _field(catalog, label, ctype, index, hex_=False, max_len=None, types=None, **member) -> Field:
    style = style_of(ctype, hex_)
    table = enum_table(catalog, ctype.enum_name, types) if style is Style.ENUM else None
    style = Style.SIGNED if style is Style.ENUM and table is None else style  # no names anywhere: only the number
    return Field(label, style, index, ctype, max_len or DEFAULT_MAX_LEN, table, **member)


def arg_fields(catalog: Catalog, arg: Arg, types: "DwarfTypes | None", length: int | None = None) -> list[Field]:
    fields = [_field(catalog, arg.name, arg.ctype, arg.index, arg.hex, arg.max_len, types, length=length)]
    if types is not None:
        from probegen.generators.typesource import member_ctype  # only with a binary's DWARF

        for member in arg.members:
            ctype = member_ctype(types, arg.ctype.struct_name, member)
            # bpftrace prints a char array member whole (up to its NUL): BCC must not cut it
            array = ctype.kind is Kind.STRING and not ctype.pointer_sized and ctype.size > 0
            fields.append(_field(catalog, f"{arg.name}->{member}", ctype, arg.index, types=types,
                                 max_len=ctype.size if array else None, struct=arg.ctype.pointee, member=member))
    return fields


def probe_line(catalog: Catalog, probe: Probe, types: "DwarfTypes | None" = None) -> ProbeLine:
    """Each note argument with a name (SPDK's arg0 0 has none; its clock has) and the struct
    members it asks for."""
    fields = [field for arg in probe.note_args if arg.name
              for field in arg_fields(catalog, arg, types, probe.arg(arg.length).index if arg.length else None)]
    named = sum(1 for f in fields if f.style is Style.ENUM)
    if named > MAX_NAMED_ENUMS:
        raise InputError(f"probe '{probe.name}' has {named} enum arguments printed by name; scripts print at "
                         f"most {MAX_NAMED_ENUMS} by name: mark the others 'hex: true'", probe.location)
    return ProbeLine(probe, tuple(fields), len(probe.note_args))


def struct_definitions(lines: list[ProbeLine], types: "DwarfTypes | None") -> str:
    """C of the structs whose members the lines print ("" for none)."""
    from probegen.generators.structs import render_definitions  # only with a binary's DWARF

    structs = list(dict.fromkeys(f.struct for line in lines for f in line.fields if f.struct))
    return render_definitions(types, structs) if types is not None and structs else ""


def enum_chain(table: EnumTable, value: str, name: str) -> list[str]:
    """bpftrace ``if`` rows setting ``name`` to the name of ``value``, one per value; a name
    is cut to what a literal holds (names may come from a traced binary's DWARF)."""
    return [f'if ({value} == {number}) {{ {name} = "{c_string(cut_literal(shown))}"; }}'
            for number, shown in table.names]


def enum_lookup(table: EnumTable, value: str, name: str, known: str, unnamed: str = "") -> list[str]:
    """bpftrace statements setting ``name`` to the name of ``value`` and ``known`` to 1, or
    ``name`` to ``unnamed`` and ``known`` to 0. Rows, not a map filled in BEGIN: SPDK's
    bpftrace.sh appends its own BEGIN; a chain of conditional literals inside a printf
    fails 0.17's verifier in some probes."""
    chain = enum_chain(table, value, name)
    return [f"// names of enum {table.name}", f'{name} = "{unnamed}";', f"{known} = 1;",
            *chain[:1], *("else " + row for row in chain[1:]), f"else {{ {known} = 0; }}"]
