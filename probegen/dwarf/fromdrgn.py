"""Turning drgn's types (read by elfutils, in C) into ``probegen.dwarf.model``
types, with the names, bitfields and layouts C and bpftrace need.

A type reached twice by name is one object, and pointer targets are
converted after the type holding them, so ``struct s { struct s *next; }``
ends. What drgn reads is still checked (sizes, bitfields, types no member
can have) as probegen.dwarf.load checks DIEs, and the result is walked
for cycles before anything prints it.
"""

from __future__ import annotations

import drgn

from probegen.dwarf import model as m
from probegen.dwarf.cnames import c_identifier, unique
from probegen.dwarf.damage import Damaged
from probegen.dwarf.load import MAX_NESTING, _MAX_SIZE, _base, _bytes, _is_object, _place_flexible_arrays, check_acyclic

K = drgn.TypeKind
_QUALIFIERS = ((drgn.Qualifiers.CONST, "const"), (drgn.Qualifiers.VOLATILE, "volatile"),
               (drgn.Qualifiers.RESTRICT, "restrict"), (drgn.Qualifiers.ATOMIC, "_Atomic"))


def _size(t: drgn.Type) -> int | None:
    size = t.size
    if size is not None and not 0 <= size < _MAX_SIZE:
        raise Damaged(f"{t.kind.name.lower()} {t.type_name()} has size {size}")
    return size


class Converter:
    """Converts drgn types, each named one once."""

    def __init__(self, pointer_size: int):
        self.pointer_size = pointer_size
        self._named: dict[tuple, m.Type] = {}
        self._pointers: list[tuple[m.Pointer, drgn.Type]] = []
        self._checked: dict[int, int] = {}
        self._depth = 0

    def root(self, t: drgn.Type) -> m.Type:
        result = self.convert(t)
        while self._pointers:
            pointer, target = self._pointers.pop()
            pointer.target = self.convert(target)
        check_acyclic(result, self._checked)
        return result

    def convert(self, t: drgn.Type) -> m.Type:
        if self._depth >= MAX_NESTING:
            raise Damaged(f"types nested more than {MAX_NESTING} deep")
        self._depth += 1
        try:
            flags = t.qualifiers
            if not flags:
                return self._unqualified(t)
            return m.Qualified(tuple(word for flag, word in _QUALIFIERS if flags & flag),
                               self._unqualified(t.unqualified()))
        finally:
            self._depth -= 1

    def _unqualified(self, t: drgn.Type) -> m.Type:
        kind = t.kind
        key = None
        if kind in (K.STRUCT, K.UNION, K.CLASS, K.ENUM) and t.tag is not None:
            key = (kind, t.tag, t.is_complete())
        elif kind == K.TYPEDEF:
            key = (kind, t.name)
        if key in self._named:
            return self._named[key]
        if kind in (K.STRUCT, K.UNION, K.CLASS):
            result = self._aggregate(t, key)
        elif kind == K.ENUM:
            result = self._enum(t)
        elif kind == K.TYPEDEF:
            result = m.Typedef(c_identifier(t.name), m.Void())
            self._named[key] = result
            result.target = self.convert(t.type)
            target = result.target
            # bpftrace rejects "typedef struct { ... } name_t;": an anonymous
            # struct, union or enum is written under its typedef's name.
            if isinstance(target, (m.Struct, m.Enum)) and target.name is None:
                target.name = result.name
                if isinstance(target, m.Struct):
                    target.typedef_name = True
        elif kind == K.POINTER:
            result = m.Pointer(m.Void(), _size(t) or self.pointer_size)
            self._pointers.append((result, t.type))
        elif kind == K.ARRAY:
            result = self._array(t)
        elif kind == K.FUNCTION:
            result = self._function(t)
        elif kind in (K.INT, K.BOOL, K.FLOAT):
            encoding = "boolean" if kind == K.BOOL else "float" if kind == K.FLOAT else \
                ("signed" if t.is_signed else "unsigned") + ("_char" if "char" in t.name else "")
            result = _base(t.name, _size(t), encoding)
        elif kind == K.VOID:
            result = m.Void()
        else:  # a type C has no word for (complex numbers): its bytes
            result = _bytes(_size(t) or 0) if t.size else m.Void()
        if key is not None:
            self._named[key] = result
        return result

    def _name(self, t: drgn.Type) -> tuple[str | None, str | None]:
        """(C name, DWARF's name where it differs) of a struct or enum."""
        if t.tag is None:
            return None, None
        name = c_identifier(t.tag)
        return name, (t.tag if name != t.tag else None)

    def _aggregate(self, t: drgn.Type, key) -> m.Struct:
        name, source = self._name(t)
        complete = t.is_complete()
        struct = m.Struct("union" if t.kind == K.UNION else "struct", name, _size(t) if complete else None,
                          declaration=not complete, source_name=source)
        if key is not None:
            self._named[key] = struct  # before the members: they may point back
        if not complete:
            return struct
        taken: set[str] = set()
        natural = 1
        for member in t.members:
            converted = self._member(member, taken)
            struct.members.append(converted)
            natural = max(natural, _alignment(member.type))
        aligned = _alignment(t)
        struct.alignment = aligned if aligned > natural else None
        _place_flexible_arrays(struct)
        return struct

    def _member(self, member: drgn.TypeMember, taken: set[str]) -> m.Member:
        type_ = self.convert(member.type)
        bit_offset, bit_size = member.bit_offset, member.bit_field_size or None
        if not 0 <= bit_offset < _MAX_SIZE:
            raise Damaged(f"member {member.name} has bit offset {bit_offset}")
        under = m.unqualified(type_)
        if bit_size is not None:
            if not (isinstance(under, m.Enum) or isinstance(under, m.Base) and under.encoding != "float"):
                raise Damaged(f"bitfield {member.name} is not of an integer type")
            if not 0 < bit_size <= (under.size or 0) * 8:
                raise Damaged(f"bitfield {member.name} is {bit_size} bits wide")
        elif bit_offset % 8:
            raise Damaged(f"member {member.name} starts inside a byte")
        elif not _is_object(type_):
            raise Damaged(f"member {member.name} has no type an object can have")
        name = member.name
        if name is None and not (isinstance(under, m.Struct) and under.name is None):
            name = "__unnamed"  # only an anonymous struct or union can go without a name
        if name is not None:
            name = unique(c_identifier(name), taken)
        return m.Member(name, type_, bit_offset // 8, bit_size, bit_offset if bit_size is not None else None)

    def _enum(self, t: drgn.Type) -> m.Enum:
        name, source = self._name(t)
        complete = t.is_complete()
        enum = m.Enum(name, _size(t.type) if complete else 4, declaration=not complete, source_name=source)
        if complete:
            enum.signed = t.type.is_signed
            taken: set[str] = set()
            for enumerator in t.enumerators:
                enum.enumerators.append(m.Enumerator(unique(c_identifier(enumerator.name), taken), enumerator.value))
        return enum

    def _array(self, t: drgn.Type) -> m.Array:
        counts: list[int | None] = []
        while t.kind == K.ARRAY and not t.qualifiers:
            if t.length is not None and not 0 <= t.length < _MAX_SIZE:
                raise Damaged(f"array of {t.length} elements")
            counts.append(t.length)
            t = t.type
        if None in counts[1:]:
            raise Damaged("an array with an inner dimension without a bound")
        element = self.convert(t)
        if not _is_object(element):
            raise Damaged("an array of elements of no object type")
        return m.Array(element, counts)

    def _function(self, t: drgn.Type) -> m.Function:
        params = [self.convert(p.type) for p in t.parameters]
        returns = self.convert(t.type)
        if isinstance(m.unqualified(returns), (m.Array, m.Function)):
            raise Damaged("a function type returns an array or a function")
        if any(not _is_object(p) for p in params):
            raise Damaged("a function type has a parameter of no object type")
        return m.Function(returns, params, t.is_variadic)


def _alignment(t: drgn.Type) -> int:
    try:
        return drgn.alignof(t)
    except (TypeError, ValueError):  # incomplete or a function: no alignment
        return 1
