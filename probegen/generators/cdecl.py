"""Plans of C definitions that bpftrace 0.17 loads and that lay out exactly as DWARF says;
probegen.generators.structs writes them. bpftrace takes no typedefs and no
``__attribute__`` after a closing brace: typedefs are resolved, and the planner follows
the SysV layout rules to pad, or pack members, only where a compiler would not put a
member where DWARF does.
"""

import itertools
import re
from dataclasses import dataclass, field

from probegen.catalog.ctype import align_up, bit_start, enum_size
from probegen.dwarf import model as m
from probegen.errors import InputError


@dataclass
class Item:  # one member line of a struct or union body
    head: str  # type text before the declarator ("unsigned int", "struct foo", "char")
    declarator: str  # "x", "*p", "(*fn)(int)", "a[2][3]", "flags : 3", "" for anonymous
    nested: "Plan | None" = None  # inline definition of an anonymous struct/union/enum
    attributes: str = ""  # " __attribute__((packed))"
    comment: str = ""  # pahole-style offset/size (written with --annotate)


@dataclass
class Plan:  # how one struct, union or enum is written
    kind: str  # "struct", "union", "enum"
    name: str | None  # None: anonymous, written inline
    items: list[Item] = field(default_factory=list)
    enumerators: list[tuple[str, str]] = field(default_factory=list)  # (name, C literal)
    align: int = 1  # alignment of the type as written (what an outer layout sees)
    comment: str = ""  # above it: "typedef struct {...} foo_t: ..." or its name in the debug info
    tail_comment: str = ""  # a struct's size and member count (written with --annotate)


_PAD = re.compile(r"__pad\d+")
_SIZED_INTS = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long"}


class Planner:
    """Plans every struct, union and enum reached from the requested types."""

    def __init__(self):
        self._plans: dict[int, Plan] = {}
        self._enumerators: dict[str, m.Enum] = {}

    def align_of(self, t: m.Type) -> int:
        t = m.unqualified(t)
        if isinstance(t, m.Base):
            return max(1, min(t.size, 16))
        if isinstance(t, (m.Enum, m.Pointer)):
            return t.size
        if isinstance(t, m.Array):
            return self.align_of(t.element)
        return self.plan(t).align  # a struct: a member's type is no void or function (fromdrgn)

    def declarator(self, t: m.Type, inner: str) -> tuple[str, str, Plan | None]:
        """(head, declarator, nested plan) declaring ``inner`` as type ``t``."""
        t = m.strip_typedefs(t)
        if isinstance(t, m.Qualified):
            under = m.strip_typedefs(t.target)
            quals = " ".join(q for q in t.qualifiers if q != "_Atomic"
                             and (q != "restrict" or isinstance(under, m.Pointer)))
            if isinstance(under, m.Pointer):  # qualifies the pointer: "char *const p"
                return self.declarator(under, f"{quals} {inner}".strip())
            head, decl, nested = self.declarator(under, inner)
            return f"{quals} {head}".strip(), decl, nested
        if isinstance(t, m.Pointer):
            star = f"(*{inner})" if isinstance(m.unqualified(t.target), (m.Array, m.Function)) else f"*{inner}"
            return self.declarator(t.target, star)
        if isinstance(t, m.Array):
            dims = "".join("[]" if c is None else f"[{c}]" for c in t.counts)
            return self.declarator(t.element, f"{inner}{dims}")
        if isinstance(t, m.Function):
            params = [self._param(p) for p in t.params] or (["void"] if t.prototyped and not t.varargs else [])
            if t.varargs and t.params:  # "(...)" alone is no C: "()" takes anything
                params.append("...")
            return self.declarator(t.returns, f"{inner}({', '.join(params)})")
        if isinstance(t, m.Base):
            return t.name, inner, None
        # A compiler would not make this enum this size (packed or -fshort-enums), or it has no
        # enumerators to define it with: bpftrace cannot be told; an integer can. An anonymous
        # enum is defined once, where it is first planned: "enum { A, B } x, y;" has A and B once.
        if isinstance(t, m.Enum) and (t.size != enum_size(e.value for e in t.enumerators) or not t.enumerators
                                      or (t.name is None and id(t) in self._plans)):
            return _SIZED_INTS.get(t.size, "unsigned int"), inner, None
        if isinstance(t, (m.Enum, m.Struct)):  # an anonymous one is defined in place
            return (t.kind, inner, self.plan(t)) if t.name is None else (f"{t.kind} {t.name}", inner, None)
        return "void", inner, None  # void, or what C cannot name

    def _param(self, t: m.Type) -> str:
        head, decl, nested = self.declarator(t, "")  # an anonymous aggregate as a parameter cannot be named
        return "void *" if nested is not None else f"{head} {decl}".strip()

    def plan(self, t: m.Struct | m.Enum) -> Plan:
        if id(t) in self._plans:
            return self._plans[id(t)]
        plan = self._plans[id(t)] = Plan(t.kind, t.name)
        if isinstance(t, m.Enum):
            plan.enumerators = [(e.name, f"{e.value}ULL" if e.value > 0x7FFFFFFFFFFFFFFF else str(e.value))
                                for e in t.enumerators]
            for e in t.enumerators:  # C has one namespace for all enumerators
                other = self._enumerators.setdefault(e.name, t)
                if other is not t:
                    raise InputError(f"enumerator {e.name} is in two enums ({other.name or 'anonymous'} and "
                                     f"{t.name or 'anonymous'}): C cannot define both")
        else:
            body = self._plan_union if t.kind == "union" else self._plan_struct
            plan.items, size, plan.align = body(t)
            if size % plan.align != 0:  # no compiler would lay it out so: every member packed
                plan.items, size, plan.align = body(t, force_packed=True)
            plan.tail_comment = f"size: {size}, members: {len(t.members)}"
        if isinstance(t, m.Struct) and t.typedef_name:
            plan.comment = f"typedef {t.kind} {{...}} {t.name}: bpftrace takes no typedefs"
        elif t.source_name:
            plan.comment = f"{t.source_name} in the debug info"
        return plan

    def _item(self, member: m.Member, packed: bool) -> Item:
        name = member.name or ""
        inner = name if member.bit_size is None else f"{name} : {member.bit_size}".lstrip()  # ": 3" unnamed
        head, decl, nested = self.declarator(member.type, inner)
        bits = f":{member.bit_offset - member.offset * 8:2}" if member.bit_size is not None else ""
        return Item(head, decl, nested, " __attribute__((packed))" if packed else "",
                    f"{member.offset:5}{bits} {member.type.size or 0:4}")

    def _pad(self, names: set[str], size: int) -> Item:
        name = next(f"__pad{i}" for i in itertools.count() if f"__pad{i}" not in names)
        names.add(name)
        return Item("char", f"{name}[{size}]", comment=f"padding: {size} bytes")

    def _bit_pad(self, bits: int) -> Item:
        return Item("unsigned char", f": {bits}", comment=f"padding: {bits} bits")

    def _names(self, struct: m.Struct, into: set[str]) -> set[str]:
        # An unnamed member is an anonymous struct or union (fromdrgn names the others): its members
        # and its padding share the enclosing namespace.
        for member in struct.members:
            if member.name:
                into.add(member.name)
            else:
                inner = m.unqualified(member.type)
                self._names(inner, into)
                into.update(_PAD.findall(" ".join(i.declarator for i in self.plan(inner).items)))
        return into

    def _plan_struct(self, struct: m.Struct, force_packed: bool = False) -> tuple[list[Item], int, int]:
        """(items, size, alignment) of a struct's body."""
        names = self._names(struct, set())
        items: list[Item] = []
        members = sorted(struct.members, key=lambda mb: mb.bit_offset if mb.bit_size is not None else mb.offset * 8)
        cur, align = 0, 1  # bits used so far, alignment so far
        for member in members:
            a, size = self.align_of(member.type), member.type.size or 0
            packed = force_packed and a > 1  # packing a member of alignment 1 changes nothing (gcc warns)
            if member.bit_size is not None:
                target, unit = member.bit_offset, size * 8
                if bit_start(cur, unit, member.bit_size) != target or force_packed:
                    items.extend(self._pad_bits(names, cur, target, struct))
                    packed = packed or bit_start(target, unit, member.bit_size) != target
                cur = target + member.bit_size
            else:
                target, here = member.offset, (cur + 7) // 8
                packed = packed or target % a != 0
                if target < here:
                    raise _unlike(struct, f"member {member.name or '(anonymous)'} at offset {target} "
                                          "overlaps the one before")
                if (packed and target > here) or (not packed and align_up(here, a) != target):
                    items.extend(self._pad_bits(names, cur, target * 8, struct))
                cur = (target + size) * 8
            items.append(self._item(member, packed))
            if not packed and (member.name or member.bit_size is None):  # an unnamed bitfield aligns nothing
                align = max(align, a)
        end = (cur + 7) // 8
        if struct.alignment and struct.alignment > align and items and not force_packed:
            items[0].attributes += f" __attribute__((aligned({struct.alignment})))"
            align = struct.alignment
        size = struct.size if struct.size is not None else align_up(end, align)
        if align_up(end, align) != size:
            if size < end:
                raise _unlike(struct, f"members end at {end}, past its size {size}")
            last = m.unqualified(members[-1].type) if members else None
            if isinstance(last, m.Array) and last.counts[0] is None:  # a flexible array member
                raise _unlike(struct, f"bytes after its flexible array member {members[-1].name}")
            items.extend(self._pad_bits(names, cur, size * 8, struct))
        return items, size, align

    def _pad_bits(self, names: set[str], cur: int, target: int, struct: m.Struct) -> list[Item]:
        if target < cur:
            raise _unlike(struct, "overlapping bitfields")
        items = []
        if cur % 8 and target // 8 > cur // 8:
            items.append(self._bit_pad(8 - cur % 8))
            cur = align_up(cur, 8)
        if target // 8 > cur // 8:
            items.append(self._pad(names, target // 8 - cur // 8))
            cur = target // 8 * 8
        if target > cur:
            items.append(self._bit_pad(target - cur))
        return items

    def _plan_union(self, union: m.Struct, force_packed: bool = False) -> tuple[list[Item], int, int]:
        names = self._names(union, set())
        items, align, biggest = [], 1, 0
        for member in union.members:
            packed = force_packed and self.align_of(member.type) > 1
            items.append(self._item(member, packed))
            if not packed and (member.name or member.bit_size is None):
                align = max(align, self.align_of(member.type))
            biggest = max(biggest, (member.type.size or 0) if member.bit_size is None else (member.bit_size + 7) // 8)
        size = union.size if union.size is not None else align_up(biggest, align)
        if align_up(biggest, align) != size:
            items.append(self._pad(names, size))
        return items, size, align


def _unlike(struct: m.Struct, why: str) -> InputError:
    return InputError(f"cannot reproduce the layout of {struct.kind} {struct.name or '(anonymous)'}: {why}")


def order_definitions(roots: list[m.Struct | m.Enum]) -> tuple[list[m.Struct], list[m.Type]]:
    """(forward declarations, definitions in dependency order): structs reached only through
    pointers are declared, others defined before use."""
    # sizes: of each type visited, by (kind, name): a header's type is a DIE in every unit that
    # includes it, one definition per name.
    defined, pointed, sizes = [], {}, {}

    def visit(t: m.Type) -> None:
        k = (t.kind, t.name)
        if k in sizes:
            if sizes[k] != t.size:
                raise InputError(f"two different types named '{k[0]} {k[1]}' ({sizes[k]} and {t.size} bytes) "
                                 "are reachable from the types asked for")
            return
        sizes[k] = t.size
        if isinstance(t, m.Struct):
            for member in t.members:
                need(member.type, by_value=True)
        defined.append(t)  # after what it needs

    def need(t: m.Type, by_value: bool) -> None:
        # What a member of type t needs: named types defined before it (by value) or declared.
        t = m.unqualified(t)
        if isinstance(t, m.Pointer):
            need(t.target, by_value=False)
        elif isinstance(t, m.Array):
            need(t.element, by_value)
        elif isinstance(t, m.Function):
            for part in (t.returns, *t.params):
                need(part, by_value=False)
        elif isinstance(t, m.Enum) and t.name is not None and t.enumerators:
            visit(t)  # enums are always defined: an incomplete enum is an error
        elif isinstance(t, m.Struct) and t.name is None:  # written inline: its members' needs
            for member in t.members:
                need(member.type, by_value)
        elif isinstance(t, m.Struct) and by_value:
            visit(t)
        elif isinstance(t, m.Struct):
            pointed.setdefault((t.kind, t.name), t)

    for root in roots:  # as DwarfTypes.aggregate finds them, under any typedef
        if isinstance(root, m.Enum) and not root.enumerators:
            raise InputError(f"enum {root.source_name or root.name} has no enumerators in the debug info: "
                             "C cannot define it")
        visit(root)
    forward = sorted((s for k, s in pointed.items() if k not in sizes), key=lambda s: (s.name or "", s.kind))
    return forward, defined
