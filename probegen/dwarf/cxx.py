"""A C++ program's types, read with pyelftools and offered to fromdrgn.py as
drgn offers C's: drgn 0.3.0 leaves out base classes and raises BadDataError
on references, member pointers and nullptr_t. A base class's members move to
where the base is (the derived class may use its tail padding, where no C
member can overlap); references are pointers. pyelftools inflates compressed
sections whole and follows DW_AT_sibling anywhere: sections are checked
first, children walked here.
"""

from types import SimpleNamespace

import drgn
from elftools.dwarf.die import DIE
from elftools.dwarf.dwarf_expr import DWARFExprParser
from elftools.elf.elffile import ELFFile

from probegen.dwarf.fromdrgn import MAX_NESTING, SIGNED_INTS, c_identifier
from probegen.dwarf.locate import Damaged, inflate_within_claims
from probegen.elf.notes import guard_elf

K, Q = drgn.TypeKind, drgn.Qualifiers
_INDEXED = {"DW_TAG_structure_type": "struct", "DW_TAG_class_type": "struct", "DW_TAG_union_type": "union",
            "DW_TAG_enumeration_type": "enum", "DW_TAG_typedef": "typedef"}
_KINDS = {"DW_TAG_structure_type": K.STRUCT, "DW_TAG_class_type": K.CLASS, "DW_TAG_union_type": K.UNION,
          "DW_TAG_enumeration_type": K.ENUM, "DW_TAG_typedef": K.TYPEDEF, "DW_TAG_pointer_type": K.POINTER,
          "DW_TAG_reference_type": K.POINTER, "DW_TAG_rvalue_reference_type": K.POINTER,
          "DW_TAG_unspecified_type": K.POINTER, "DW_TAG_subroutine_type": K.FUNCTION}  # C++'s nullptr_t: a pointer
_QUALIFIERS = {"DW_TAG_const_type": Q.CONST, "DW_TAG_volatile_type": Q.VOLATILE,
               "DW_TAG_restrict_type": Q.RESTRICT, "DW_TAG_atomic_type": Q.ATOMIC}
_UNIT_REFS = frozenset(("DW_FORM_ref1", "DW_FORM_ref2", "DW_FORM_ref4", "DW_FORM_ref8", "DW_FORM_ref_udata"))
# A base class's members are copied into each class derived from it: a class deriving twice from one
# that derives twice from ..., 20 levels deep, is 2**20 members from 4 KB of DWARF.
MAX_COPIED = 100_000


class _Type(SimpleNamespace):
    """As fromdrgn.py reads drgn's Type; ``later`` computes attributes when first asked for."""

    qualifiers, tag, name, size, alignment, declaration, prototyped = Q(0), None, None, None, None, False, True
    later: dict = {}

    def __getattr__(self, name):
        if name not in self.later:
            raise AttributeError(name)
        read, self.later[name] = self.later[name], None
        if read is None:  # asked for again while it is read
            raise Damaged(f"the type at {self.die_offset:#x} contains itself (a DW_AT_type cycle)")
        value = read()
        setattr(self, name, value)
        return value

    def is_complete(self) -> bool:
        return not self.declaration

    def unqualified(self):
        return self.__dict__.get("under", self)

    def type_name(self) -> str:
        return self.tag or self.name or "type"


_VOID = _Type(kind=K.VOID)


def _name(die) -> str | None:
    attr = die.attributes.get("DW_AT_name")
    return attr.value.decode("utf-8", "replace") if attr is not None and isinstance(attr.value, bytes) else None


def _int(die, name, default=None):
    attr = die.attributes.get(name)
    return attr.value if attr is not None and type(attr.value) is int else default


def _bytes(size: int) -> _Type:
    return _Type(kind=K.ARRAY, length=size, type=_Type(kind=K.INT, name="unsigned char", size=1, is_signed=False))


def children(die):
    """Damaged where the links go wrong."""
    if not die.has_children:
        return
    cu = die.cu
    end = cu.cu_offset + cu.size
    offset = die.offset + die.size
    while True:
        if offset >= end:
            raise Damaged(f"children of the DIE at {die.offset:#x} run past the end of their unit")
        child = cu.get_DIE_from_refaddr(offset)
        if child.is_null():
            return
        yield child
        offset = child.offset + child.size
        if not child.has_children:
            continue
        sibling = child.attributes.get("DW_AT_sibling")
        if sibling is not None and sibling.form in _UNIT_REFS and isinstance(sibling.value, int):
            offset = cu.cu_offset + sibling.value
            if not child.offset + child.size <= offset < end:
                raise Damaged(f"DW_AT_sibling of the DIE at {child.offset:#x} points to {offset:#x}, "
                              "outside what follows it")
            continue
        # No usable link: read the subtree DIE by DIE (not cached: a
        # function's body can be thousands of DIEs nobody asks for).
        depth = 1
        while depth:
            if offset >= end:
                raise Damaged(f"the subtree of the DIE at {child.offset:#x} runs past the end of its unit")
            inner = DIE(cu=cu, stream=child.dwarfinfo.debug_info_sec.stream, offset=offset)
            depth += -1 if inner.is_null() else 1 if inner.has_children else 0
            if inner.size <= 0:
                raise Damaged(f"empty DIE at {offset:#x}")
            offset += inner.size


class CxxTypes:
    def __init__(self, info, pointer_size: int):
        inflate_within_claims(info.elf)
        self.pointer_size = pointer_size
        self.names: dict[str, list[tuple[str, object]]] = {}  # name -> [(kind, DIE)], first definition first
        for cu in guard_elf(str(info.path), lambda: ELFFile(info.elf.stream)).get_dwarf_info().iter_CUs():
            pending = [(cu.get_top_DIE(), "")]
            while pending:
                parent, prefix = pending.pop()
                for die in children(parent):
                    text = _name(die)
                    if die.tag == "DW_TAG_namespace":
                        if prefix.count("::") >= 64:  # deeper is damage, not code
                            raise Damaged(f"namespaces nested more than 64 deep at {die.offset:#x}")
                        pending.append((die, f"{prefix}{text or '(anonymous namespace)'}::"))
                    elif die.tag in _INDEXED and text and "DW_AT_declaration" not in die.attributes:
                        self.names.setdefault(prefix + text, []).append((_INDEXED[die.tag], die))
        self._qualified = {die.offset: name for name, rows in self.names.items() if "::" in name for _, die in rows}
        self._types: dict[int, _Type] = {}
        self._making: set[int] = set()
        self._copied = 0  # members copied from base classes

    def lookup(self, name: str, kinds) -> _Type | None:
        rows = [row for row in self.names.get(name, ()) if row[0] in kinds]
        if not rows:  # the C name printed for a C++ one ("Box_int_" for "Box<int>")
            rows = [row for n in sorted(self.names) if c_identifier(n) == name
                    for row in self.names[n] if row[0] in kinds]
        # A struct tag wins over a typedef of the same name (typedef struct foo foo).
        return self.type(min(rows, key=lambda row: kinds.index(row[0]))[1]) if rows else None

    def type(self, die) -> _Type:
        known = self._types.get(die.offset)
        if known is None:
            if die.offset in self._making:
                raise Damaged(f"the type at {die.offset:#x} contains itself (a DW_AT_type cycle)")
            if len(self._making) >= MAX_NESTING:
                raise Damaged(f"types nested more than {MAX_NESTING} deep at {die.offset:#x}")
            self._making.add(die.offset)
            try:
                known = self._types[die.offset] = self._make(die)
            finally:
                self._making.discard(die.offset)
        return known

    def _target(self, die):
        return self.type(die.get_DIE_from_attribute("DW_AT_type")) if "DW_AT_type" in die.attributes else _VOID

    def _make(self, die) -> _Type:
        tag, size = die.tag, _int(die, "DW_AT_byte_size")
        if tag in _QUALIFIERS:  # "const volatile": one type
            inner = self._target(die)
            return _Type(kind=inner.kind, qualifiers=_QUALIFIERS[tag] | inner.qualifiers, under=inner.unqualified())
        if tag == "DW_TAG_base_type":
            encoding = _int(die, "DW_AT_encoding", 0)
            if encoding == 0x3:  # complex: no C word for it in the emitted C
                return _bytes(size or 0)
            return _Type(kind=K.BOOL if encoding == 0x2 else K.FLOAT if encoding == 0x4 else K.INT,
                         name=_name(die) or "", size=size, is_signed=encoding in (0x5, 0x6))
        if tag == "DW_TAG_ptr_to_member_type":
            # C++ "int S::*": an offset; to a member function, a function
            # pointer and an adjustment (Itanium ABI). C has neither.
            to_function = "DW_AT_type" in die.attributes and \
                die.get_DIE_from_attribute("DW_AT_type").tag == "DW_TAG_subroutine_type"
            size = size or self.pointer_size * (2 if to_function else 1)
            if to_function or size not in SIGNED_INTS:
                word = _Type(kind=K.INT, name=SIGNED_INTS[self.pointer_size], size=self.pointer_size, is_signed=True)
                return _Type(kind=K.ARRAY, length=size // self.pointer_size, type=word)
            return _Type(kind=K.INT, name=SIGNED_INTS[size], size=size, is_signed=True)
        if tag == "DW_TAG_array_type":
            return self._array(die)
        if tag not in _KINDS:  # a type C has no word for (DW_TAG_string_type, ...): its bytes
            return _bytes(size) if size else _VOID
        t = _Type(kind=_KINDS[tag], size=size, name=_name(die) or "anonymous", alignment=_int(die, "DW_AT_alignment"),
                  declaration="DW_AT_declaration" in die.attributes, prototyped="DW_AT_prototyped" in die.attributes,
                  die_offset=die.offset, later={"type": lambda: self._target(die)})
        if tag in _INDEXED:
            t.tag = self._qualified.get(die.offset) or _name(die)
        if t.kind == K.ENUM:
            t.later.update(enumerators=lambda: self._enumerators(die), type=lambda: self._underlying(t, die))
        elif t.kind == K.FUNCTION:
            t.later["parameters"] = lambda: [SimpleNamespace(type=self._target(c)) for c in children(die)
                                             if c.tag == "DW_TAG_formal_parameter"]
            t.is_variadic = any(c.tag == "DW_TAG_unspecified_parameters" for c in children(die))
        elif tag != "DW_TAG_typedef":
            t.later["members"] = lambda: self._members(die)
        return t

    def _array(self, die) -> _Type:
        counts = []
        for child in children(die):
            if child.tag != "DW_TAG_subrange_type":
                continue
            count = _int(child, "DW_AT_count")
            upper = child.attributes.get("DW_AT_upper_bound")
            if count is None and upper is not None and type(upper.value) is int and upper.form != "DW_FORM_exprloc" \
                    and not upper.form.startswith("DW_FORM_ref"):
                count = upper.value - _int(child, "DW_AT_lower_bound", 0) + 1
                if count > 1 << 40:  # upper bound -1 stored unsigned: GNU zero-length array
                    count = 0
            counts.append(count)
        t = _Type(kind=K.ARRAY, length=counts.pop() if counts else None, die_offset=die.offset,
                  later={"type": lambda: self._target(die)})
        for count in reversed(counts):  # int a[2][3]: an array of 2 arrays of 3
            t = _Type(kind=K.ARRAY, length=count, type=t)
        return t

    def _location(self, die) -> int | None:
        """A member's offset; None where it is not a constant (a virtual base)."""
        location = die.attributes.get("DW_AT_data_member_location")
        if location is None or type(location.value) is int:
            return location.value if location else 0
        if not isinstance(location.value, list):
            raise Damaged(f"member at {die.offset:#x} has location {location.value!r}")
        ops = DWARFExprParser(die.cu.structs).parse_expr(location.value)  # DWARF 2: DW_OP_plus_uconst N
        if len(ops) == 1 and ops[0].op_name in ("DW_OP_plus_uconst", "DW_OP_constu") and ops[0].args:
            return ops[0].args[0]
        return None

    def _members(self, die) -> list:
        members = []
        for child in children(die):
            offset = self._location(child)
            if offset is None:
                continue
            if child.tag == "DW_TAG_inheritance":
                base = self._target(child)
                if base.kind in (K.STRUCT, K.CLASS, K.UNION) and not base.declaration:
                    self._copied += len(base.members)
                    if self._copied > MAX_COPIED:
                        raise Damaged(f"more than {MAX_COPIED} members copied from base classes (a base used in "
                                      "many places)")
                    members += [SimpleNamespace(name=mb.name, type=mb.type, bit_offset=mb.bit_offset + offset * 8,
                                                bit_field_size=mb.bit_field_size) for mb in base.members]
            elif child.tag == "DW_TAG_member" and "DW_AT_external" not in child.attributes:
                bit_offset, bit_size = offset * 8, _int(child, "DW_AT_bit_size")
                if bit_size is not None:
                    bit_offset = _int(child, "DW_AT_data_bit_offset")
                    if bit_offset is None:  # DWARF 2/3: from the most significant bit of the storage unit
                        storage, from_msb = _int(child, "DW_AT_byte_size") or 4, _int(child, "DW_AT_bit_offset", 0)
                        little = child.dwarfinfo.config.little_endian
                        bit_offset = offset * 8 + (storage * 8 - from_msb - bit_size if little else from_msb)
                members.append(SimpleNamespace(name=_name(child), type=self._target(child), bit_offset=bit_offset,
                                               bit_field_size=bit_size))
        return members

    def _enumerators(self, die) -> list:
        rows = []
        for child in children(die):
            if child.tag == "DW_TAG_enumerator":
                # gcc writes negative values as DW_FORM_sdata; DW_FORM_dataN
                # values are unsigned (200 in an int enum is data1 200).
                value = _int(child, "DW_AT_const_value")
                if value is None or not -(1 << 63) <= value < (1 << 64):
                    raise Damaged(f"enumerator at {child.offset:#x} has no integer value")
                rows.append(SimpleNamespace(name=_name(child) or "anonymous", value=value))
        return rows

    def _underlying(self, enum: _Type, die) -> _Type:
        """The enum's integer type as drgn gives it: its size, and signed
        as its DW_AT_type is, or without one if a value is negative."""
        under, steps = self._target(die).unqualified(), 0
        while under.kind == K.TYPEDEF:
            steps += 1
            if steps > MAX_NESTING:
                raise Damaged(f"types nested more than {MAX_NESTING} deep at {die.offset:#x}")
            under = under.type.unqualified()
        if under.kind in (K.INT, K.BOOL, K.FLOAT):
            signed = under.is_signed
        else:  # none, or damage
            signed = under.kind == K.VOID and any(e.value < 0 for e in enum.enumerators)
        return _Type(kind=K.INT, name="int", size=enum.size or 4, is_signed=signed)
