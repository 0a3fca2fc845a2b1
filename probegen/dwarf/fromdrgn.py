"""drgn's types (or cxx.py's, which read like them) as ``probegen.dwarf.model``
types, with the names, bitfields and layouts C and bpftrace need; a named
struct reached through a pointer gets its members when first asked for. What
the DWARF says is checked, as it may be damaged (sizes, bitfields, cycles
other than through a struct, nesting), so whatever walks the types ends.
"""

import re

import drgn

from probegen.dwarf import model as m
from probegen.dwarf.locate import Damaged, reading

K = drgn.TypeKind
_QUALIFIERS = ((drgn.Qualifiers.CONST, "const"), (drgn.Qualifiers.VOLATILE, "volatile"),
               (drgn.Qualifiers.RESTRICT, "restrict"), (drgn.Qualifiers.ATOMIC, "_Atomic"))
# Real types nest a few dozen deep (a struct in a struct, through typedefs and arrays).
MAX_NESTING = 100
# Largest size believed: no C object is bigger than the address space.
MAX_SIZE = 1 << 48
# An anonymous struct is converted, and written inline, wherever it is used: in hostile DWARF
# two members of one type at each of 30 levels make 2**30. All of spdk_tgt's types: 841.
MAX_ANONYMOUS = 10_000
# Every name in emitted C passes through c_identifier, for bpftrace's parser: C++
# names types "Box<int>" or "ns::S" and members "_vptr.S", a hostile file anything.
_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]")
# C11's keywords, and C++'s type words
_RESERVED = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
    _Imaginary _Noreturn _Static_assert _Thread_local bool true false
""".split())

# Base type names as gcc and clang write them for C, and as C accepts them.
C_BASE_NAMES = frozenset((
    "char", "signed char", "unsigned char", "short int", "short unsigned int", "int",
    "unsigned int", "long int", "long unsigned int", "long long int", "long long unsigned int",
    "short", "unsigned short", "long", "unsigned long", "long long", "unsigned long long",
    "_Bool", "float", "double", "long double", "__int128", "unsigned __int128",
    "_Float16", "_Float32", "_Float64", "_Float128", "_Float32x", "_Float64x",
))
SIGNED_INTS = {1: "signed char", 2: "short", 4: "int", 8: "long", 16: "__int128"}
UNSIGNED_INTS = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long",
                 16: "unsigned __int128"}
FLOATS = {4: "float", 8: "double", 16: "long double"}
_MAX_NAME = 200  # longer: cut, and told apart by a hash


def c_identifier(name: str) -> str:
    """"Box<int>" -> "Box_int_"; a keyword gets a '_' appended."""
    text = _NOT_IDENTIFIER.sub("_", name)
    if not text or text[0].isdigit():
        text = "_" + text
    if text in _RESERVED:
        text += "_"
    if len(text) > _MAX_NAME:
        import hashlib

        text = f"{text[:_MAX_NAME - 17]}_{hashlib.sha256(name.encode('utf-8', 'replace')).hexdigest()[:16]}"
    return text


def _unique(name: str, taken: dict[str, int]) -> str:
    """``name``, or ``name_2``, ``name_3``... if taken; now taken. ``taken``: name -> the suffix its next
    search resumes from (all below are taken: hostile DWARF may give 100,000 members one name)."""
    candidate, index = name, taken.get(name, 1)
    while candidate in taken:
        index += 1
        candidate = f"{name}_{index}"
    taken[name] = index
    taken.setdefault(candidate, 1)
    return candidate


def _size(t) -> int | None:
    size = t.size
    if size is not None and not 0 <= size < MAX_SIZE:
        raise Damaged(f"{t.kind.name.lower()} {t.type_name()} has size {size}")
    return size


def _base(name: str | None, size: int, encoding: str) -> m.Type:
    """A base type spelled as C spells it. C++ names some otherwise (bool,
    wchar_t, char16_t): C gets the type of the same size and kind."""
    spelling = "unsigned __int128" if name == "__int128 unsigned" else name  # as gcc names it
    if spelling in C_BASE_NAMES:
        return m.Base(spelling, size, encoding)
    if encoding == "boolean" and size == 1:
        return m.Base("_Bool", size, encoding)
    names = FLOATS if encoding == "float" else SIGNED_INTS if encoding in ("signed", "signed_char") else UNSIGNED_INTS
    if size in names:  # a boolean wider than a byte: an unsigned int
        return m.Base(names[size], size, "unsigned" if encoding == "boolean" else encoding)
    return m.Array(m.Base("unsigned char", 1, "unsigned_char"), [size])  # its bytes


def _is_object(t: m.Type) -> bool:
    """Whether C allows a member, an array element or a parameter of this type."""
    return not isinstance(m.unqualified(t), (m.Void, m.Function))


class _Struct(m.Struct):
    """Members (and so alignment) converted when first asked for."""

    _pending = None  # (converter, drgn type) until then

    def _filled(self) -> dict:
        if self._pending is not None:
            converter, t = self._pending
            self._pending = None
            with reading(converter.path):
                converter.fill(self, t)
        return self.__dict__

    members = property(lambda self: self._filled()["_members"], lambda self, v: setattr(self, "_members", v))
    alignment = property(lambda self: self._filled()["_alignment"], lambda self, v: setattr(self, "_alignment", v))


class Converter:
    """Converts the drgn types of the file at ``path``, each named one once."""

    def __init__(self, pointer_size: int, path):
        self.pointer_size = pointer_size
        self.path = path
        self._named: dict[tuple, m.Type] = {}
        self._heights: dict[tuple, int] = {}  # of typedefs: how deep their types nest
        self._open: set[tuple] = set()  # typedefs being converted, since the last struct's members
        self._filling: set[int] = set()  # structs whose members are being converted
        self._depth = self._deepest = 0
        self.anonymous = 0

    def convert(self, t: drgn.Type, lazy: bool = False) -> m.Type:
        """``lazy`` (under a pointer): named structs' members are left for later."""
        if self._depth >= MAX_NESTING:
            raise Damaged(f"types nested more than {MAX_NESTING} deep")
        self._depth += 1
        self._deepest = max(self._deepest, self._depth)
        try:
            flags = t.qualifiers
            if not flags:
                return self._unqualified(t, lazy)
            return m.Qualified(tuple(word for flag, word in _QUALIFIERS if flags & flag),
                               self._unqualified(t.unqualified(), lazy))
        finally:
            self._depth -= 1

    def _unqualified(self, t: drgn.Type, lazy: bool) -> m.Type:
        kind = t.kind
        key = None
        # cxx.py's types are told apart by DIE too: C++ scopes reuse names (size_type, _Impl).
        if kind in (K.STRUCT, K.UNION, K.CLASS, K.ENUM) and t.tag is not None:
            key = (kind, t.tag, t.is_complete(), getattr(t, "die_offset", None))
        elif kind == K.TYPEDEF:
            key = (kind, t.name, getattr(t, "die_offset", None))
        known = self._named.get(key)
        if known is not None:
            if key in self._open:
                raise Damaged("types that contain themselves other than through a struct (a cycle)")
            if not lazy and id(known) in self._filling:
                raise Damaged(f"{known.kind} {known.name} contains itself")
            if self._depth + self._heights.get(key, 0) > MAX_NESTING:
                raise Damaged(f"types nested more than {MAX_NESTING} deep")
            self._deepest = max(self._deepest, self._depth + self._heights.get(key, 0))
            under = m.unqualified(known)
            if not lazy and isinstance(under, _Struct):
                under._filled()  # reached by value: its members now, as deep as it is
            return known
        if kind in (K.STRUCT, K.UNION, K.CLASS):
            result = self._aggregate(t, key, lazy)
        elif kind == K.ENUM:
            result = self._enum(t)
        elif kind == K.TYPEDEF:
            result = m.Typedef(c_identifier(t.name), m.Void())
            self._named[key] = result
            self._open.add(key)
            outer, self._deepest = self._deepest, self._depth
            try:
                result.target = self.convert(t.type, lazy)
            finally:
                self._open.discard(key)
                self._heights[key] = self._deepest - self._depth
                self._deepest = max(outer, self._deepest)
            target = result.target
            # bpftrace rejects "typedef struct { ... } name_t;": an anonymous
            # struct, union or enum is written under its typedef's name.
            if isinstance(target, (m.Struct, m.Enum)) and target.name is None:
                target.name = result.name
                if isinstance(target, m.Struct):
                    target.typedef_name = True
        elif kind == K.POINTER:
            result = m.Pointer(self.convert(t.type, lazy=True), _size(t) or self.pointer_size)
        elif kind == K.ARRAY:
            result = self._array(t, lazy)
        elif kind == K.FUNCTION:
            result = self._function(t)
        elif kind in (K.INT, K.BOOL, K.FLOAT):
            encoding = "boolean" if kind == K.BOOL else "float" if kind == K.FLOAT else \
                ("signed" if t.is_signed else "unsigned") + ("_char" if "char" in t.name else "")
            result = _base(t.name, _size(t), encoding)
        else:
            result = m.Void()
        if key is not None:
            self._named[key] = result
        return result

    def _aggregate(self, t: drgn.Type, key, lazy: bool) -> m.Struct:
        name, source = _names(t)
        complete = t.is_complete()
        kind = "union" if t.kind == K.UNION else "struct"
        if name is None:
            self.anonymous += 1
            if self.anonymous > MAX_ANONYMOUS:
                raise Damaged(f"more than {MAX_ANONYMOUS} anonymous structs and unions (one used in many places)")
        struct = _Struct(kind, name, _size(t) if complete else None, source_name=source)
        if key is not None:
            self._named[key] = struct  # before the members: they may point back
        if complete and lazy and key is not None:
            struct._pending = (self, t)
        elif complete:
            self.fill(struct, t)
        return struct

    def fill(self, struct: m.Struct, t: drgn.Type) -> None:
        outer, self._open = self._open, set()
        self._filling.add(id(struct))
        try:
            taken: dict[str, int] = {}
            natural = 1
            for member in t.members:
                struct.members.append(self._member(member, taken))
                natural = max(natural, _alignment(member.type))
        finally:
            self._open = outer
            self._filling.discard(id(struct))
        aligned = _alignment(t)  # cxx.py's types: 1, and DW_AT_alignment as it is
        struct.alignment = aligned if aligned > natural else getattr(t, "alignment", None)
        # C allows an array without a bound only as the last member of a
        # struct; anywhere else it becomes GNU C's "[0]", same layout.
        last = max(struct.members, key=lambda mb: (mb.offset, mb.bit_offset or 0), default=None)
        for member in struct.members:
            under = m.unqualified(member.type)
            if isinstance(under, m.Array) and under.counts[0] is None and (member is not last or t.kind == K.UNION):
                member.type = m.Array(under.element, [0, *under.counts[1:]])

    def _member(self, member: drgn.TypeMember, taken: dict[str, int]) -> m.Member:
        type_ = self.convert(member.type)
        bit_offset, bit_size = member.bit_offset, member.bit_field_size or None
        if not 0 <= bit_offset < MAX_SIZE:
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
            name = _unique(c_identifier(name), taken)
        return m.Member(name, type_, bit_offset // 8, bit_size, bit_offset if bit_size is not None else None)

    def _enum(self, t: drgn.Type) -> m.Enum:
        name, source = _names(t)
        complete = t.is_complete()
        enum = m.Enum(name, _size(t.type) if complete else 4, source_name=source)
        if complete:
            enum.signed = t.type.is_signed
            taken: dict[str, int] = {}
            for enumerator in t.enumerators:
                enum.enumerators.append(m.Enumerator(_unique(c_identifier(enumerator.name), taken), enumerator.value))
        return enum

    def _array(self, t: drgn.Type, lazy: bool) -> m.Array:
        counts: list[int | None] = []
        while t.kind == K.ARRAY and not t.qualifiers:
            if t.length is not None and not 0 <= t.length < MAX_SIZE:
                raise Damaged(f"array of {t.length} elements")
            if len(counts) >= MAX_NESTING:
                raise Damaged(f"types nested more than {MAX_NESTING} deep")
            counts.append(t.length)
            t = t.type
        if None in counts[1:]:
            raise Damaged("an array with an inner dimension without a bound")
        element = self.convert(t, lazy)
        if not _is_object(element):
            raise Damaged("an array of elements of no object type")
        return m.Array(element, counts)

    def _function(self, t: drgn.Type) -> m.Function:
        params = [self.convert(p.type, lazy=True) for p in t.parameters]  # C needs only their names
        returns = self.convert(t.type, lazy=True)
        if isinstance(m.unqualified(returns), (m.Array, m.Function)):
            raise Damaged("a function type returns an array or a function")
        if any(not _is_object(p) for p in params):
            raise Damaged("a function type has a parameter of no object type")
        # cxx.py's say whether they are prototyped (C++'s are not, in DWARF: "()")
        return m.Function(returns, params, t.is_variadic, getattr(t, "prototyped", True))


def _names(t: drgn.Type) -> tuple[str | None, str | None]:
    """(C name, DWARF's name where it differs) of a struct or enum."""
    name = None if t.tag is None else c_identifier(t.tag)
    return name, (t.tag if name != t.tag else None)


def _alignment(t) -> int:
    try:
        return drgn.alignof(t)
    except (TypeError, ValueError):  # incomplete, a function, or not drgn's
        return 1
