"""Turning a C++ program's DIEs (``probegen.dwarf.walk.PyelftoolsDie``)
into ``probegen.dwarf.model`` types; probegen.dwarf.fromdrgn shares its
checks.

Only the DIEs of the types asked for, and what they reference, are ever
parsed.

The DIEs may be damaged, so nothing they say is followed blindly: a
pointer's target is loaded after the type holding it (so reaching a type
again through a pointer, as ``struct s { struct s *next; }`` does, never
recurses), any other way back to a DIE still being loaded is a cycle no C
type has, nesting is bounded, and names become C names (C++ DWARF names
types ``Box<int>``).
"""

from __future__ import annotations

from probegen.dwarf import model as m
from probegen.dwarf.cnames import C_BASE_NAMES, FLOATS, SIGNED_INTS, UNSIGNED_INTS, c_identifier, unique
from probegen.dwarf.damage import Damaged

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
_POINTERS = ("DW_TAG_pointer_type", "DW_TAG_reference_type", "DW_TAG_rvalue_reference_type")
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
# DIEs being loaded at once, one inside the other: real types nest a few
# dozen deep (a struct in a struct, through typedefs and arrays).
MAX_NESTING = 100
# Largest size believed: no C object is bigger than the address space.
_MAX_SIZE = 1 << 48


def _name(die) -> str | None:
    attr = die.attributes.get("DW_AT_name")
    if attr is None or not isinstance(attr.value, bytes):
        return None
    return attr.value.decode("utf-8", "replace")


def _int(die, name, default=None):
    attr = die.attributes.get(name)
    return attr.value if attr is not None and type(attr.value) is int else default


def _size(die, default=None):
    size = _int(die, "DW_AT_byte_size")
    if size is None:
        return default
    if not 0 <= size < _MAX_SIZE:
        raise Damaged(f"DIE at {die.offset:#x} has size {size}")
    return size


def _base(name: str | None, size: int, encoding: str) -> m.Type:
    """A base type spelled as C spells it. C++ and other languages name
    theirs otherwise (bool, wchar_t, char16_t): C gets the type of the
    same size and kind."""
    spelling = _BASE_SPELLINGS.get(name, name) if name else None
    if spelling in C_BASE_NAMES:
        return m.Base(spelling, size, encoding)
    if encoding == "boolean" and size == 1:
        return m.Base("_Bool", size, encoding)
    if encoding == "float" and size in FLOATS:
        return m.Base(FLOATS[size], size, encoding)
    if encoding in ("signed", "signed_char") and size in SIGNED_INTS:
        return m.Base(SIGNED_INTS[size], size, encoding)
    if size in UNSIGNED_INTS and encoding != "float":
        return m.Base(UNSIGNED_INTS[size], size, "unsigned" if encoding not in ("unsigned_char", "UTF") else encoding)
    return _bytes(size)


def _bytes(size: int) -> m.Type:
    """What a type C cannot name becomes: its bytes."""
    return m.Array(m.Base("unsigned char", 1, "unsigned_char"), [size])


class TypeLoader:
    """Loads types from DIEs, each DIE once.

    ``qualified_names`` maps the DIE offsets of types inside C++
    namespaces to their full names ("ns::S"), which the DIE alone does
    not tell.
    """

    def __init__(self, pointer_size: int = 8, qualified_names: dict[int, str] | None = None):
        if pointer_size not in (4, 8):
            raise Damaged(f"pointer size {pointer_size}")
        self.pointer_size = pointer_size
        self.qualified_names = qualified_names or {}
        self._memo: dict[int, m.Type] = {}
        self._loading: set[int] = set()  # DIEs whose load has not returned
        self._pointers: list[tuple[m.Pointer, object]] = []  # targets still to load
        self._checked: dict[int, int] = {}  # types check_acyclic passed (see there); _memo keeps them alive

    def load_root(self, die) -> m.Type:
        """The type of ``die`` with all it reaches, checked for cycles."""
        result = self.load(die)
        while self._pointers:
            pointer, pointer_die = self._pointers.pop()
            pointer.target = self._target(pointer_die)
        check_acyclic(result, self._checked)
        return result

    def load(self, die) -> m.Type:
        offset = die.offset
        if offset in self._loading:
            raise Damaged(f"the type at {offset:#x} contains itself (a DW_AT_type cycle)")
        known = self._memo.get(offset)
        if known is not None:
            return known
        if len(self._loading) >= MAX_NESTING:
            raise Damaged(f"types nested more than {MAX_NESTING} deep at {offset:#x}")
        self._loading.add(offset)
        try:
            result = self._load(die)
        finally:
            self._loading.discard(offset)
        self._memo[offset] = result
        return result

    def _load(self, die) -> m.Type:
        tag = die.tag
        if tag in _AGGREGATES:
            return self._aggregate(die, _AGGREGATES[tag])
        if tag == "DW_TAG_enumeration_type":
            return self._enum(die)
        if tag == "DW_TAG_base_type":
            return _base(_name(die), _size(die, 0), _ENCODINGS.get(_int(die, "DW_AT_encoding", 0), "unknown"))
        if tag == "DW_TAG_typedef":
            typedef = m.Typedef(c_identifier(_name(die) or "anonymous"), self._target(die))
            self._name_anonymous(typedef)
            return typedef
        if tag in _POINTERS:
            pointer = m.Pointer(m.Void(), _size(die, self.pointer_size))
            if "DW_AT_type" in die.attributes:
                self._pointers.append((pointer, die))
            return pointer
        if tag in _QUALIFIERS:
            target = self._target(die)
            quals = {_QUALIFIERS[tag]}
            if isinstance(target, m.Qualified):  # const volatile: one node
                quals |= set(target.qualifiers)
                target = target.target
            return m.Qualified(tuple(q for q in _QUALIFIER_ORDER if q in quals), target)
        if tag == "DW_TAG_array_type":
            return self._array(die)
        if tag == "DW_TAG_subroutine_type":
            return self._function(die)
        if tag == "DW_TAG_ptr_to_member_type":
            # C++ "int S::*": an offset; to a member function, a function
            # pointer and an adjustment (Itanium ABI). C has neither.
            target = die.attributes.get("DW_AT_type")
            to_function = target is not None and die.get_DIE_from_attribute("DW_AT_type").tag == "DW_TAG_subroutine_type"
            size = _size(die, self.pointer_size * (2 if to_function else 1))
            if to_function or size not in SIGNED_INTS:
                return m.Array(m.Base(SIGNED_INTS[self.pointer_size], self.pointer_size, "signed"),
                               [size // self.pointer_size])
            return m.Base(SIGNED_INTS[size], size, "signed")
        if tag == "DW_TAG_unspecified_type":  # C++ std::nullptr_t
            return m.Pointer(m.Void(), _size(die, self.pointer_size))
        size = _size(die)
        if size:  # a type C has no word for (DW_TAG_string_type, ...): its bytes
            return _bytes(size)
        return m.Void()

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

    def _type_name(self, die) -> tuple[str | None, str | None]:
        """(C name, DWARF's name where it differs) of a struct or enum."""
        source = self.qualified_names.get(die.offset) or _name(die)
        if source is None:
            return None, None
        name = c_identifier(source)
        return name, (source if name != source else None)

    def _aggregate(self, die, kind: str) -> m.Struct:
        name, source = self._type_name(die)
        struct = m.Struct(
            kind, name, _size(die),
            alignment=_int(die, "DW_AT_alignment"),
            declaration="DW_AT_declaration" in die.attributes,
            die_offset=die.offset, source_name=source,
        )
        taken: set[str] = set()
        for child in die.children():
            if child.tag == "DW_TAG_member" and "DW_AT_external" not in child.attributes:
                member = self._member(child, taken)
                if member is not None:
                    struct.members.append(member)
            elif child.tag == "DW_TAG_inheritance":
                struct.members.extend(self._base_class(child, taken))
        _place_flexible_arrays(struct)
        return struct

    def _location(self, die) -> int | None:
        """A member's offset, or None where it is not a constant (a
        virtual base class)."""
        location = die.attributes.get("DW_AT_data_member_location")
        if location is None:
            return 0
        if type(location.value) is int:
            return location.value
        if not isinstance(location.value, list):
            raise Damaged(f"member at {die.offset:#x} has location {location.value!r}")
        # DWARF 2 style: an expression, DW_OP_plus_uconst N
        return die.constant_offset(location.value)

    def _base_class(self, die, taken: set[str]) -> list[m.Member]:
        """A C++ base class's members, moved to where the base is: not
        the base as one member, since the derived class may reuse the
        base's tail padding (Itanium ABI), where no C member can overlap."""
        offset = self._location(die)
        base = self._target(die)
        if offset is None or not isinstance(base, m.Struct):
            return []  # virtual base: where it is depends on the object; left as padding
        members = []
        for member in base.members:
            name = unique(member.name, taken) if member.name is not None else None
            bit_offset = member.bit_offset + offset * 8 if member.bit_offset is not None else None
            members.append(m.Member(name, member.type, member.offset + offset, member.bit_size, bit_offset))
        return members

    def _member(self, die, taken: set[str]) -> m.Member | None:
        offset = self._location(die)
        if offset is None:
            return None
        if not 0 <= offset < _MAX_SIZE:
            raise Damaged(f"member at {die.offset:#x} has offset {offset}")
        type_ = self._target(die)
        bit_size = _int(die, "DW_AT_bit_size")
        bit_offset = None
        if bit_size is not None:
            if not 0 <= bit_size <= 128:
                raise Damaged(f"bitfield at {die.offset:#x} is {bit_size} bits wide")
            data_bit_offset = _int(die, "DW_AT_data_bit_offset")
            if data_bit_offset is not None:  # DWARF 4+: from the start of the struct
                bit_offset = data_bit_offset
            else:  # DWARF 2/3: from the most significant bit of the storage unit
                storage = _size(die) or (m.unqualified(type_).size or 4)
                from_msb = _int(die, "DW_AT_bit_offset", 0)
                if die.little_endian:
                    bit_offset = offset * 8 + storage * 8 - from_msb - bit_size
                else:
                    bit_offset = offset * 8 + from_msb
            if not 0 <= bit_offset < _MAX_SIZE:
                raise Damaged(f"bitfield at {die.offset:#x} has bit offset {bit_offset}")
            offset = bit_offset // 8
            under = m.unqualified(type_)
            if not (isinstance(under, m.Enum) or isinstance(under, m.Base) and under.encoding != "float"):
                raise Damaged(f"bitfield at {die.offset:#x} is not of an integer type")
            if bit_size > (under.size or 0) * 8:
                raise Damaged(f"bitfield at {die.offset:#x} is wider than its type")
        elif not _is_object(type_):
            raise Damaged(f"member at {die.offset:#x} has no type an object can have")
        name = _name(die)
        under = m.unqualified(type_)
        if name is None and not (isinstance(under, m.Struct) and under.name is None):
            name = "__unnamed"  # only an anonymous struct or union can go without a name
        if name is not None:
            name = unique(c_identifier(name), taken)
        return m.Member(name, type_, offset, bit_size, bit_offset)

    def _enum(self, die) -> m.Enum:
        name, source = self._type_name(die)
        enum = m.Enum(
            name, _size(die, 4),
            declaration="DW_AT_declaration" in die.attributes, die_offset=die.offset,
            source_name=source,
        )
        underlying = None
        if "DW_AT_type" in die.attributes:
            underlying = m.unqualified(self._target(die))
        if isinstance(underlying, m.Base):
            enum.signed = underlying.signed
        taken: set[str] = set()
        for child in die.children():
            if child.tag != "DW_TAG_enumerator":
                continue
            # gcc writes negative values as DW_FORM_sdata; DW_FORM_dataN
            # values are unsigned (200 in an int enum is data1 200).
            value = _int(child, "DW_AT_const_value")
            if value is None or not -(1 << 63) <= value < (1 << 64):
                raise Damaged(f"enumerator at {child.offset:#x} has no integer value")
            enum.enumerators.append(m.Enumerator(unique(c_identifier(_name(child) or "anonymous"), taken), value))
        if underlying is None and any(e.value < 0 for e in enum.enumerators):
            enum.signed = True
        return enum

    def _array(self, die) -> m.Array:
        counts: list[int | None] = []
        for child in die.children():
            if child.tag != "DW_TAG_subrange_type":
                continue
            count = _int(child, "DW_AT_count")
            if count is None:
                upper = child.attributes.get("DW_AT_upper_bound")
                if upper is not None and type(upper.value) is int and upper.form != "DW_FORM_exprloc" \
                        and not upper.form.startswith("DW_FORM_ref"):
                    lower = _int(child, "DW_AT_lower_bound", 0)
                    count = upper.value - lower + 1
                    if count > 1 << 40:  # upper bound -1 stored unsigned: GNU zero-length array
                        count = 0
            if count is not None and not 0 <= count < _MAX_SIZE:
                raise Damaged(f"array at {die.offset:#x} has {count} elements")
            counts.append(count)
        if None in counts[1:]:
            raise Damaged(f"array at {die.offset:#x} has an inner dimension without a bound")
        element = self._target(die)
        if not _is_object(element):
            raise Damaged(f"array at {die.offset:#x} has elements of no object type")
        return m.Array(element, counts or [None])

    def _function(self, die) -> m.Function:
        params: list[m.Type] = []
        varargs = False
        for child in die.children():
            if child.tag == "DW_TAG_formal_parameter":
                params.append(self._target(child))
            elif child.tag == "DW_TAG_unspecified_parameters":
                varargs = True
        returns = self._target(die)
        if isinstance(m.unqualified(returns), (m.Array, m.Function)):
            raise Damaged(f"function type at {die.offset:#x} returns an array or a function")
        if any(not _is_object(p) for p in params):
            raise Damaged(f"function type at {die.offset:#x} has a parameter of no object type")
        return m.Function(returns, params, varargs, prototyped="DW_AT_prototyped" in die.attributes)


def _place_flexible_arrays(struct: m.Struct) -> None:
    """C allows an array without a bound only as the last member of a
    struct; anywhere else it becomes GNU C's "[0]", same layout."""
    last = max(struct.members, key=lambda mb: (mb.offset, mb.bit_offset or 0), default=None)
    for member in struct.members:
        t = m.unqualified(member.type)
        if isinstance(t, m.Array) and t.counts[0] is None and (member is not last or struct.kind == "union"):
            member.type = m.Array(t.element, [0, *t.counts[1:]])


def _is_object(t: m.Type) -> bool:
    """Whether C allows a member, an array element or a parameter of
    type ``t`` (not void, not a function)."""
    return not isinstance(m.unqualified(t), (m.Void, m.Function))


def _edges(t: m.Type) -> list[m.Type]:
    if isinstance(t, (m.Typedef, m.Pointer, m.Qualified)):
        return [t.target]
    if isinstance(t, m.Array):
        return [t.element]
    if isinstance(t, m.Function):
        return [t.returns, *t.params]
    if isinstance(t, m.Struct):
        return [member.type for member in t.members]
    return []


def check_acyclic(root: m.Type, checked: dict[int, int] | None = None) -> None:
    """Damaged unless every cycle among the types reached from ``root``
    passes through a struct or union, as C's do, and chains of other
    types (pointer to pointer to array of...) stay short: whatever walks
    the types, printing them, would otherwise never end.

    ``checked`` holds the types earlier calls found sound (by id, with
    their heights), which are not walked again (the types a loader made
    are not changed after, and reach only types made before them); this
    call's are added to it if they are sound."""
    known = {} if checked is None else checked
    seen: set[int] = set()
    height: dict[int, int] = {}  # longest chain of non-struct types below each
    structs = [root]
    while structs:  # each struct, then the non-struct types under it
        top = structs.pop()
        if id(top) in seen or id(top) in known:
            continue
        seen.add(id(top))
        # Depth-first over non-struct types; "path" holds the current chain.
        stack = [(top, iter(_edges(top)))]
        path = {id(top)}
        while stack:
            node, edges = stack[-1]
            child = next(edges, None)
            if child is None:
                stack.pop()
                path.discard(id(node))
                below = [height.get(id(t), known.get(id(t), 0)) for t in _edges(node) if not isinstance(t, m.Struct)]
                height[id(node)] = 1 + max(below, default=0)
                if height[id(node)] > MAX_NESTING:
                    raise Damaged(f"a chain of more than {MAX_NESTING} types")
                continue
            if isinstance(child, m.Struct):
                structs.append(child)
                continue
            if id(child) in path:
                raise Damaged("types that contain themselves other than through a struct (a cycle)")
            if id(child) in seen or id(child) in known:
                continue
            seen.add(id(child))
            stack.append((child, iter(_edges(child))))
            path.add(id(child))
    if checked is not None:
        checked.update(height)
