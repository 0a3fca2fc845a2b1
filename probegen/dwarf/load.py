"""Turning DIEs into ``probegen.dwarf.model`` types.

Only the DIEs of the types asked for, and what they reference, are ever
parsed; the type index says where to start.
"""

from __future__ import annotations

from elftools.dwarf.dwarf_expr import DWARFExprParser

from probegen.dwarf import model as m

_AGGREGATES = {
    "DW_TAG_structure_type": "struct",
    "DW_TAG_class_type": "struct",
    "DW_TAG_union_type": "union",
}
_QUALIFIERS = {
    "DW_TAG_const_type": "const",
    "DW_TAG_volatile_type": "volatile",
    "DW_TAG_restrict_type": "restrict",
    "DW_TAG_atomic_type": "_Atomic",
}
_QUALIFIER_ORDER = ("const", "volatile", "restrict", "_Atomic")
# DW_ATE_* codes -> names used by Base.encoding.
_ENCODINGS = {
    0x1: "address", 0x2: "boolean", 0x3: "complex_float", 0x4: "float",
    0x5: "signed", 0x6: "signed_char", 0x7: "unsigned", 0x8: "unsigned_char",
    0x10: "UTF",
}
# gcc's DW_AT_name spellings that C does not accept as written.
_BASE_SPELLINGS = {
    "__int128 unsigned": "unsigned __int128",
    "complex float": "_Complex float",
    "complex double": "_Complex double",
    "complex long double": "_Complex long double",
}


def _name(die) -> str | None:
    attr = die.attributes.get("DW_AT_name")
    return attr.value.decode("utf-8", "replace") if attr else None


def _int(die, name, default=None):
    attr = die.attributes.get(name)
    return attr.value if attr is not None and isinstance(attr.value, int) else default


class TypeLoader:
    """Loads types from DIEs, each DIE once."""

    def __init__(self, pointer_size: int = 8):
        self.pointer_size = pointer_size
        self._memo: dict[int, m.Type] = {}

    def load(self, die) -> m.Type:
        known = self._memo.get(die.offset)
        if known is not None:
            return known
        tag = die.tag
        if tag in _AGGREGATES:
            return self._aggregate(die, _AGGREGATES[tag])
        if tag == "DW_TAG_enumeration_type":
            return self._enum(die)
        if tag == "DW_TAG_base_type":
            name = _name(die) or "int"
            result = m.Base(
                _BASE_SPELLINGS.get(name, name), _int(die, "DW_AT_byte_size", 0),
                _ENCODINGS.get(_int(die, "DW_AT_encoding", 0), "unknown"),
            )
        elif tag == "DW_TAG_typedef":
            result = m.Typedef(_name(die) or "", m.Void())
            self._memo[die.offset] = result
            result.target = self._target(die)
            self._name_anonymous(result)
            return result
        elif tag in ("DW_TAG_pointer_type", "DW_TAG_reference_type", "DW_TAG_rvalue_reference_type"):
            result = m.Pointer(m.Void(), _int(die, "DW_AT_byte_size", self.pointer_size))
            self._memo[die.offset] = result
            result.target = self._target(die)
            return result
        elif tag in _QUALIFIERS:
            target = self._target(die)
            quals = {_QUALIFIERS[tag]}
            if isinstance(target, m.Qualified):  # const volatile: one node
                quals |= set(target.qualifiers)
                target = target.target
            result = m.Qualified(tuple(q for q in _QUALIFIER_ORDER if q in quals), target)
        elif tag == "DW_TAG_array_type":
            result = self._array(die)
        elif tag == "DW_TAG_subroutine_type":
            result = self._function(die)
        else:  # DW_TAG_unspecified_type and anything C scripts cannot use
            result = m.Void()
        self._memo[die.offset] = result
        return result

    def _target(self, die) -> m.Type:
        if "DW_AT_type" not in die.attributes:
            return m.Void()
        return self.load(die.get_DIE_from_attribute("DW_AT_type"))

    @staticmethod
    def _name_anonymous(typedef: m.Typedef) -> None:
        # bpftrace rejects "typedef struct { ... } name_t;": an anonymous
        # struct, union or enum is emitted under its typedef's name instead.
        target = typedef.target
        if isinstance(target, (m.Struct, m.Enum)) and target.name is None and typedef.name:
            target.name = typedef.name
            if isinstance(target, m.Struct):
                target.typedef_name = True

    def _aggregate(self, die, kind: str) -> m.Struct:
        struct = m.Struct(
            kind, _name(die), _int(die, "DW_AT_byte_size"),
            alignment=_int(die, "DW_AT_alignment"),
            declaration="DW_AT_declaration" in die.attributes,
            die_offset=die.offset,
        )
        self._memo[die.offset] = struct
        for child in die.iter_children():
            if child.tag == "DW_TAG_member" and "DW_AT_external" not in child.attributes:
                struct.members.append(self._member(child))
        return struct

    def _member(self, die) -> m.Member:
        offset = 0
        location = die.attributes.get("DW_AT_data_member_location")
        if location is not None:
            if isinstance(location.value, int):
                offset = location.value
            else:  # DWARF 2 style: an expression, DW_OP_plus_uconst N
                ops = DWARFExprParser(die.cu.structs).parse_expr(location.value)
                offset = ops[0].args[0] if ops and ops[0].args else 0
        type_ = self._target(die)
        bit_size = _int(die, "DW_AT_bit_size")
        bit_offset = None
        if bit_size is not None:
            data_bit_offset = _int(die, "DW_AT_data_bit_offset")
            if data_bit_offset is not None:  # DWARF 4+: from the start of the struct
                bit_offset = data_bit_offset
            else:  # DWARF 2/3: from the most significant bit of the storage unit
                storage = _int(die, "DW_AT_byte_size") or (m.unqualified(type_).size or 4)
                from_msb = _int(die, "DW_AT_bit_offset", 0)
                if die.dwarfinfo.config.little_endian:
                    bit_offset = offset * 8 + storage * 8 - from_msb - bit_size
                else:
                    bit_offset = offset * 8 + from_msb
            offset = bit_offset // 8
        return m.Member(_name(die), type_, offset, bit_size, bit_offset)

    def _enum(self, die) -> m.Enum:
        enum = m.Enum(
            _name(die), _int(die, "DW_AT_byte_size", 4),
            declaration="DW_AT_declaration" in die.attributes, die_offset=die.offset,
        )
        self._memo[die.offset] = enum
        underlying = None
        if "DW_AT_type" in die.attributes:
            underlying = m.unqualified(self._target(die))
        if isinstance(underlying, m.Base):
            enum.signed = underlying.signed
        for child in die.iter_children():
            if child.tag != "DW_TAG_enumerator":
                continue
            attr = child.attributes["DW_AT_const_value"]
            # gcc writes negative values as DW_FORM_sdata; DW_FORM_dataN
            # values are unsigned (200 in an int enum is data1 200).
            value = attr.value
            enum.enumerators.append(m.Enumerator(_name(child) or "", value))
        if underlying is None and any(e.value < 0 for e in enum.enumerators):
            enum.signed = True
        return enum

    def _array(self, die) -> m.Array:
        counts: list[int | None] = []
        for child in die.iter_children():
            if child.tag != "DW_TAG_subrange_type":
                continue
            count = _int(child, "DW_AT_count")
            if count is None:
                upper = child.attributes.get("DW_AT_upper_bound")
                if upper is not None and isinstance(upper.value, int) and upper.form != "DW_FORM_exprloc" \
                        and not upper.form.startswith("DW_FORM_ref"):
                    lower = _int(child, "DW_AT_lower_bound", 0)
                    count = upper.value - lower + 1
                    if count > 1 << 40:  # upper bound -1 stored unsigned: GNU zero-length array
                        count = 0
            counts.append(count)
        return m.Array(self._target(die), counts or [None])

    def _function(self, die) -> m.Function:
        params: list[m.Type] = []
        varargs = False
        for child in die.iter_children():
            if child.tag == "DW_TAG_formal_parameter":
                params.append(self._target(child))
            elif child.tag == "DW_TAG_unspecified_parameters":
                varargs = True
        return m.Function(
            self._target(die), params, varargs,
            prototyped="DW_AT_prototyped" in die.attributes,
        )
