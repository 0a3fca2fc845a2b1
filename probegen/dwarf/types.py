"""A binary's named types, looked up by name, as ``probegen.dwarf.model``
types: drgn reads the DWARF (elfutils' index, in C: no cache needed), cxx.py
a C++ program's.
"""

import os
from contextlib import AbstractContextManager

import drgn

from probegen.dwarf import model as m
from probegen.dwarf.fromdrgn import Converter
from probegen.dwarf.locate import DEFAULT_DEBUG_DIRS, DebugInfo, open_debug_info, reading
from probegen.errors import InputError, Location, NoSuchMember

_SPELLINGS = {"struct": ("struct {}", "class {}"), "union": ("union {}",), "enum": ("enum {}",), "typedef": ("{}",)}
_KINDS = tuple(_SPELLINGS)  # the order a bare name is looked up in


class DwarfTypes(AbstractContextManager):
    def __init__(self, info: DebugInfo):
        self.info = info
        self.pointer_size = info.elf.elfclass // 8
        self._types: dict[tuple, m.Type] = {}
        self._cxx = None  # probegen.dwarf.cxx.CxxTypes, made on first use
        # One for all look-ups: a type reached twice is one object.
        self._converter = Converter(self.pointer_size, info.path)
        with reading(info.path):
            self.prog = drgn.Program()
            module = self.prog.extra_module(str(info.path), 0, create=True)
            module.try_file(str(info.path), fd=os.dup(info.elf.stream.fileno()), force=True)
            if module.debug_file_status != drgn.ModuleFileStatus.HAVE:
                raise InputError(f"drgn cannot read its DWARF "
                                 f"({module.debug_file_status.name.lower().replace('_', ' ')})",
                                 Location(str(info.path)))
            self.is_cxx = self.prog.language == drgn.Language.CPP

    @classmethod
    def open(cls, binary, debug_file=None, debug_dirs=DEFAULT_DEBUG_DIRS) -> "DwarfTypes":
        info = open_debug_info(binary, debug_file, debug_dirs)
        try:
            return cls(info)
        except BaseException:
            info.close()
            raise

    def close(self) -> None:
        self.prog = None  # drgn's copy of the descriptor closes with it
        self.info.close()

    def __exit__(self, *exc):
        self.close()

    def lookup(self, name: str, kinds=_KINDS) -> m.Type:
        """The type called ``name`` (a bare name, or "struct NAME"/"enum NAME")."""
        words = name.split()
        if len(words) == 2 and words[0] in ("struct", "union", "enum"):
            kinds, name = (words[0],), words[1]
        key = (name, tuple(kinds))
        if key not in self._types:
            with reading(self.info.path):
                found = None if self.is_cxx else self._drgn_lookup(name, kinds)
                if self.is_cxx or found is not None and found.language == drgn.Language.CPP:
                    if self._cxx is None:
                        from probegen.dwarf.cxx import CxxTypes

                        self._cxx = CxxTypes(self.info, self.pointer_size)
                    found = self._cxx.lookup(name, kinds)
                result = found and self._converter.convert(found)
            if result is None:
                what = " or ".join(kinds) if len(kinds) < 4 else "struct, union, enum or typedef"
                raise InputError(f"{self.info.binary}: no {what} named '{name}' in the debug info")
            self._types[key] = result
        return self._types[key]

    def has(self, name: str, kinds=_KINDS) -> bool:
        try:
            self.lookup(name, kinds)
        except InputError:
            return False
        return True

    def _drgn_lookup(self, name: str, kinds):
        """drgn's type of that name, a struct tag before a typedef of the
        same name (typedef struct foo foo); None if there is none."""
        for kind in kinds:
            for spelling in _SPELLINGS[kind]:
                try:
                    t = self.prog.type(spelling.format(name))
                except (LookupError, SyntaxError):  # SyntaxError: a name drgn cannot parse ("int*") names no type
                    continue
                if kind != "typedef" or t.kind == drgn.TypeKind.TYPEDEF:
                    return t
        return None

    def aggregate(self, name: str, kinds=_KINDS, classes=(m.Struct, m.Enum), what="a struct, union or enum"):
        t = m.unqualified(self.lookup(name, kinds))
        if not isinstance(t, classes):
            raise InputError(f"'{name}' is not {what} in {self.info.binary}")
        return t

    def enum(self, name: str) -> m.Enum:
        return self.aggregate(name, ("enum", "typedef"), m.Enum, "an enum")

    def enumerators(self, enum_name: str) -> tuple[m.Enumerator, ...] | None:
        """The enum's enumerators in declaration order, or None if absent."""
        try:
            return tuple(self.enum(enum_name).enumerators)
        except InputError:
            return None

    def member(self, struct_name: str, member_path: str) -> m.Member:
        """The member at ``member_path`` ("qid", "id.nsid"); offsets add up."""
        t: m.Type = self.aggregate(struct_name)
        where, offset = struct_name, 0
        for part in member_path.split("."):
            t = m.unqualified(t)
            if not isinstance(t, m.Struct):
                raise InputError(f"'{where}' is not a struct or union: no member '{part}'")
            paths = _members(t)
            if part not in paths:
                raise NoSuchMember(
                    f"{t.kind} {t.name or where} has no member '{part}' (members: {', '.join(sorted(paths))})"
                )
            offset += sum(step.offset for step in paths[part])
            found = paths[part][-1]
            t = found.type
            where = f"{where}.{part}"
        bit_offset = None if found.bit_offset is None else found.bit_offset + (offset - found.offset) * 8
        return m.Member(found.name, found.type, offset, found.bit_size, bit_offset)


def _members(struct: m.Struct) -> dict[str, list[m.Member]]:
    """Each member's name -> the path of members to it, through anonymous
    members (a member of the struct's own first)."""
    paths = {member.name: [member] for member in struct.members if member.name}
    for member in struct.members:
        inner = m.unqualified(member.type)
        if member.name is None and isinstance(inner, m.Struct):
            for name, path in _members(inner).items():
                paths.setdefault(name, [member, *path])
    return paths
