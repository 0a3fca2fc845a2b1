"""A C++ program's types, read with pyelftools (drgn 0.3.0 leaves out base
classes and cannot read references; probegen.dwarf.load flattens both).

Every unit's top-level types and those of its namespaces ("ns::S") are
indexed by name on first use: slow on a large program, which is why C
programs are read through drgn. pyelftools inflates compressed sections
whole, so each is first inflated here within what it claims.
"""

from __future__ import annotations

from probegen.dwarf import model as m
from probegen.dwarf.cnames import c_identifier
from probegen.dwarf.damage import Damaged
from probegen.dwarf.load import TypeLoader
from probegen.dwarf.locate import inflate_within_claims
from probegen.dwarf.walk import PyelftoolsDie, children

_KINDS = {"DW_TAG_structure_type": "struct", "DW_TAG_class_type": "struct", "DW_TAG_union_type": "union",
          "DW_TAG_enumeration_type": "enum", "DW_TAG_typedef": "typedef"}
_MAX_NAMESPACES = 64  # C++ namespaces nest; deeper than this is damage, not code


class CxxTypes:
    def __init__(self, info, pointer_size: int):
        inflate_within_claims(info.elf)
        elf = info.pyelftools()
        self.names: dict[str, list[tuple[str, object]]] = {}  # name -> [(kind, DIE)], first definition first
        for cu in elf.get_dwarf_info().iter_CUs():
            pending = [(cu.get_top_DIE(), "")]
            while pending:
                parent, prefix = pending.pop()
                for die in children(parent):
                    name = die.attributes.get("DW_AT_name")
                    text = name.value.decode("utf-8", "replace") if name and isinstance(name.value, bytes) else None
                    if die.tag == "DW_TAG_namespace":
                        if prefix.count("::") >= _MAX_NAMESPACES:
                            raise Damaged(f"namespaces nested more than {_MAX_NAMESPACES} deep at {die.offset:#x}")
                        pending.append((die, f"{prefix}{text or '(anonymous namespace)'}::"))
                    elif die.tag in _KINDS and text and "DW_AT_declaration" not in die.attributes:
                        self.names.setdefault(prefix + text, []).append((_KINDS[die.tag], die))
        qualified = {die.offset: name for name, rows in self.names.items() if "::" in name for _, die in rows}
        self.loader = TypeLoader(pointer_size, qualified)

    def lookup(self, name: str, kinds) -> m.Type | None:
        rows = [row for row in self.names.get(name, ()) if row[0] in kinds]
        if not rows:  # the C name printed for a C++ one ("Box_int_" for "Box<int>")
            rows = [row for n in sorted(self.names) if c_identifier(n) == name
                    for row in self.names[n] if row[0] in kinds]
        if not rows:
            return None
        # A struct tag wins over a typedef of the same name (typedef struct foo foo).
        kind, die = min(rows, key=lambda row: kinds.index(row[0]) if row[0] in kinds else 9)
        return self.loader.load_root(PyelftoolsDie(die))
