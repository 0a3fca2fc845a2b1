"""Walking DIEs without trusting the links between them.

pyelftools follows DW_AT_sibling wherever it points: backwards or to the
DIE itself, its child loop never ends. ``children`` walks a DIE's
children itself and requires every step to move forward inside the unit;
subtrees without a sibling link are skipped by reading on, in a loop.
``PyelftoolsDie`` offers a pyelftools DIE to ``probegen.dwarf.load``.
"""

from __future__ import annotations

from elftools.dwarf.die import DIE

from probegen.dwarf.damage import Damaged

_UNIT_REFS = frozenset(("DW_FORM_ref1", "DW_FORM_ref2", "DW_FORM_ref4", "DW_FORM_ref8", "DW_FORM_ref_udata"))


def unit_end(cu) -> int:
    return cu.cu_offset + cu.size


def children(die):
    """The DIE's children, in order; Damaged where the links go wrong."""
    if not die.has_children:
        return
    cu = die.cu
    end = unit_end(cu)
    offset = die.offset + die.size
    while True:
        if offset >= end:
            raise Damaged(f"children of the DIE at {die.offset:#x} run past the end of their unit")
        child = cu.get_DIE_from_refaddr(offset)
        if child.is_null():
            return
        yield child
        offset = _next_sibling(child, end)


def _next_sibling(child, end: int) -> int:
    """Offset of the DIE after ``child`` and its subtree."""
    after = child.offset + child.size
    if not child.has_children:
        return after
    sibling = child.attributes.get("DW_AT_sibling")
    if sibling is not None and sibling.form in _UNIT_REFS and isinstance(sibling.value, int):
        target = child.cu.cu_offset + sibling.value
        if not after <= target < end:
            raise Damaged(f"DW_AT_sibling of the DIE at {child.offset:#x} points to {target:#x}, "
                          "outside what follows it")
        return target
    # No usable link: read the subtree DIE by DIE (not cached: a function's
    # body can be thousands of DIEs nobody asks for).
    stream = child.dwarfinfo.debug_info_sec.stream
    depth, offset = 1, after
    while depth:
        if offset >= end:
            raise Damaged(f"the subtree of the DIE at {child.offset:#x} runs past the end of its unit")
        die = DIE(cu=child.cu, stream=stream, offset=offset)
        if die.is_null():
            depth -= 1
        elif die.has_children:
            depth += 1
        if die.size <= 0:
            raise Damaged(f"empty DIE at {offset:#x}")
        offset += die.size
    return offset


class PyelftoolsDie:
    """A pyelftools DIE with the links between DIEs checked."""

    __slots__ = ("die", "offset", "tag", "attributes", "has_children")

    def __init__(self, die):
        self.die = die
        self.offset, self.tag, self.has_children = die.offset, die.tag, die.has_children
        self.attributes = die.attributes

    @property
    def little_endian(self) -> bool:
        return self.die.dwarfinfo.config.little_endian

    def children(self):
        return map(PyelftoolsDie, children(self.die))

    def get_DIE_from_attribute(self, name: str) -> "PyelftoolsDie":
        return PyelftoolsDie(self.die.get_DIE_from_attribute(name))

    def constant_offset(self, block: list[int]) -> int | None:
        return constant_offset(block, self.die.cu.structs)


def constant_offset(block: list[int], structs) -> int | None:
    """A DWARF 2 member location, DW_OP_plus_uconst N (or DW_OP_constu N);
    None for any other expression."""
    from elftools.dwarf.dwarf_expr import DWARFExprParser

    ops = DWARFExprParser(structs).parse_expr(block)
    if len(ops) == 1 and ops[0].op_name in ("DW_OP_plus_uconst", "DW_OP_constu") and ops[0].args:
        return ops[0].args[0]
    return None
