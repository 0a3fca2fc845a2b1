"""``DwarfTypes``: a binary's named types, looked up by name, as
``probegen.dwarf.model`` types (probegen.generators writes them as C).
"""

from __future__ import annotations

from probegen.dwarf import cache, model as m
from probegen.dwarf.damage import reading
from probegen.dwarf.dies import DieReader
from probegen.dwarf.index import TypeIndex
from probegen.dwarf.load import TypeLoader
from probegen.dwarf.locate import DEFAULT_DEBUG_DIRS, DebugInfo, file_key, open_debug_info
from probegen.dwarf.sections import dwarf_info
from probegen.dwarf.walk import PyelftoolsDie
from probegen.errors import InputError, NoSuchMember


class DwarfTypes:
    """Types of one binary."""

    def __init__(self, info: DebugInfo, index: TypeIndex):
        self.info = info
        self.index = index
        self._dwarf = None
        self._loader = None
        self._dies = None  # DieReader, made on first use; False: read DIEs with pyelftools (tests)
        self._types: dict[tuple[str, str | None], m.Type] = {}

    @classmethod
    def open(cls, binary, debug_file=None, debug_dirs=DEFAULT_DEBUG_DIRS, use_cache: bool = True) -> "DwarfTypes":
        info = open_debug_info(binary, debug_file, debug_dirs)
        try:
            stamp = (str(info.path.resolve()), *file_key(info.path))
            names = cache.load(info.build_id, info.path, stamp) if use_cache else None
            self = cls(info, TypeIndex(names) if names is not None else None)  # type: ignore[arg-type]
            if names is None:
                with reading(info.path):
                    self.index = TypeIndex.build(self.dwarf)
                if use_cache:
                    cache.store(info.build_id, info.path, stamp, self.index.names)
        except BaseException:
            info.close()
            raise
        return self

    def close(self) -> None:
        self.info.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def dwarf(self):
        if self._dwarf is None:
            with reading(self.info.path):
                self._dwarf = dwarf_info(self.info.elf)
        return self._dwarf

    # ---- lookup -------------------------------------------------------------

    def lookup(self, name: str, kinds=("struct", "union", "enum", "typedef")) -> m.Type:
        """The type called ``name`` (a bare name, or "struct NAME"/"enum NAME")."""
        words = name.split()
        if len(words) == 2 and words[0] in ("struct", "union", "enum"):
            kinds, name = (words[0],), words[1]
        key = (name, tuple(kinds))
        if key in self._types:
            return self._types[key]
        entries = [e for e in self.index.lookup(name) if e.kind in kinds]
        if not entries:  # the C name printed for a C++ one ("Box_int_" for "Box<int>")
            entries = [e for n in self.index.source_names(name) for e in self.index.lookup(n) if e.kind in kinds]
        if not entries:
            close = self.index.close_names(name)
            hint = f"; close names: {', '.join(close)}" if close else ""
            what = " or ".join(kinds) if len(kinds) < 4 else "struct, union, enum or typedef"
            raise InputError(f"{self.info.binary}: no {what} named '{name}' in the debug info{hint}")
        # A struct tag wins over a typedef of the same name (typedef struct foo foo).
        order = {k: i for i, k in enumerate(("struct", "union", "enum", "typedef"))}
        entries.sort(key=lambda e: order[e.kind])
        kind = entries[0].kind
        candidates = [self._load(e) for e in entries if e.kind == kind]
        result = candidates[0]
        if len(candidates) > 1:
            self._check_same(name, candidates, entries)
        self._types[key] = result
        return result

    def _load(self, entry) -> m.Type:
        with reading(self.info.path):
            if self._loader is None:
                self._loader = TypeLoader(self.info.elf.elfclass // 8, self.index.qualified_names())
            if self._dies is None:
                self._dies = DieReader(self.dwarf)
            if self._dies is False:  # pyelftools' DIEs, to compare with
                root = PyelftoolsDie(self.dwarf.get_CU_at(entry.cu_offset).get_DIE_from_refaddr(entry.die_offset))
            else:
                root = self._dies.unit_at(entry.cu_offset).die(entry.die_offset)
            return self._loader.load_root(root)

    def _check_same(self, name: str, candidates: list[m.Type], entries) -> None:
        shapes = {}
        with reading(self.info.path):
            for t, entry in zip(candidates, entries):
                shapes.setdefault(m.shape(t), []).append(entry)
        if len(shapes) > 1:
            where = "; ".join(
                f"{group[0].kind} of {group[0].size if group[0].size >= 0 else '?'} bytes "
                f"declared at line {group[0].line} (DIE {group[0].die_offset:#x})"
                for group in shapes.values()
            )
            raise InputError(
                f"{self.info.binary}: '{name}' names {len(shapes)} different types in different "
                f"compilation units: {where}"
            )

    def aggregate(self, name: str) -> m.Struct | m.Enum:
        t = m.unqualified(self.lookup(name))
        if not isinstance(t, (m.Struct, m.Enum)):
            raise InputError(f"'{name}' is not a struct, union or enum in {self.info.binary}")
        return t

    def enum(self, name: str) -> m.Enum:
        t = m.unqualified(self.lookup(name, kinds=("enum", "typedef")))
        if not isinstance(t, m.Enum):
            raise InputError(f"'{name}' is not an enum in {self.info.binary}")
        return t

    def enumerators(self, enum_name: str) -> tuple[m.Enumerator, ...] | None:
        """The enum's enumerators in declaration order, or None if absent."""
        try:
            return tuple(self.enum(enum_name).enumerators)
        except InputError:
            return None

    def member(self, struct_name: str, member_path: str) -> m.Member:
        """The member at ``member_path`` ("qid", "id.nsid"); offsets add up."""
        t: m.Type = self.aggregate(struct_name)
        where = struct_name
        found = None
        offset = 0
        for part in member_path.split("."):
            t = m.unqualified(t)
            if not isinstance(t, m.Struct):
                raise InputError(f"'{where}' is not a struct or union: no member '{part}'")
            path = _find_member(t, part)
            if path is None:
                names = sorted(_member_names(t))
                raise NoSuchMember(
                    f"{t.kind} {t.name or where} has no member '{part}' (members: {', '.join(names)})"
                )
            for step in path:
                offset += step.offset
            found = path[-1]
            t = found.type
            where = f"{where}.{part}"
        assert found is not None
        return m.Member(found.name, found.type, offset, found.bit_size, found.bit_offset)


def _find_member(struct: m.Struct, name: str) -> list[m.Member] | None:
    """Path of members to ``name``, looking into anonymous members."""
    for member in struct.members:
        if member.name == name:
            return [member]
    for member in struct.members:
        inner = m.unqualified(member.type)
        if member.name is None and isinstance(inner, m.Struct):
            rest = _find_member(inner, name)
            if rest is not None:
                return [member, *rest]
    return None


def _member_names(struct: m.Struct) -> set[str]:
    names = set()
    for member in struct.members:
        if member.name:
            names.add(member.name)
        elif isinstance(m.unqualified(member.type), m.Struct):
            names |= _member_names(m.unqualified(member.type))
    return names

