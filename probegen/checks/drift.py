"""Drift the binaries' DWARF shows and their probe notes cannot: the catalog's
enums (names and values; SPDK v25.09 numbers two nvmf_tgt_state states the other
way round from master) and the struct member paths its arguments print.
"""

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from probegen.catalog.model import Catalog, EnumDecl
from probegen.checks.verify import Finding
from probegen.errors import InputError, NoDebugInfo


@dataclass
class DebugInfos:
    """(path, probegen.dwarf.DwarfTypes) of each binary with DWARF, and why the others' could not be used."""

    catalog: Catalog
    types: list[tuple[str, object]] = field(default_factory=list)
    without: list[tuple[str, str]] = field(default_factory=list)  # (binary, why)

    def summary(self) -> str:
        """What verify's summary adds."""
        enums = len(self.catalog.enums)
        members = sum(len(arg.members) for probe in self.catalog.probes for arg in probe.args)
        if not enums and not members:
            return ""
        if not self.types:
            return "; enums and members not checked: no binary has debug info"
        checked = (f"; {enums} enum{'s' if enums != 1 else ''} and {members} member path{'s' if members != 1 else ''}"
                   " checked against debug info")
        if self.without:
            checked += f" (not in {', '.join(f'{path}: {why}' for path, why in self.without)})"
        return checked


@contextlib.contextmanager
def open_debug_infos(catalog: Catalog, paths):
    """Each binary's DWARF (in the file or a debug file found by build id), if
    the catalog has enums or member paths to check; a binary without, or with
    damaged DWARF, is noted with the reason, not an error."""
    infos = DebugInfos(catalog)
    with contextlib.ExitStack() as opened:
        if catalog.enums or any(arg.members for probe in catalog.probes for arg in probe.args):
            from probegen.dwarf import DwarfTypes  # only then: else the DWARF reader is not even imported

            for path in paths:
                try:
                    infos.types.append((str(path), opened.enter_context(DwarfTypes.open(path))))
                except NoDebugInfo:
                    infos.without.append((str(path), "no debug info"))
                except InputError as exc:
                    infos.without.append((str(path), f"debug info unusable: {exc}"))
        yield infos


def check(catalog: Catalog, infos: DebugInfos) -> Iterator[Finding]:
    """Every enum and member path of the catalog, against each binary's DWARF that has the type."""
    if not infos.types:
        return
    for enum in catalog.enums:
        yield from _enum_drift(enum, infos)
    for probe in catalog.probes:
        for arg in probe.args:
            if arg.members:
                yield from _member_drift(probe.name, arg, infos)


def _binaries(infos: DebugInfos) -> str:
    return ", ".join(path for path, _ in infos.types)


def _enum_drift(enum: EnumDecl, infos: DebugInfos) -> Iterator[Finding]:
    holders = [(path, types) for path, types in infos.types if types.has(enum.name, ("enum", "typedef"))]
    if not holders:
        yield Finding(enum.location, f"enum '{enum.name}' is not in the debug info of {_binaries(infos)}",
                      "enum-drift")
    for path, types in holders:
        try:
            enumerators = types.enum(enum.name).enumerators
        except InputError as exc:  # two different enums of that name, damaged DWARF
            yield Finding(enum.location, f"enum '{enum.name}': {exc}", "enum-drift", binary=path)
            continue
        if not enum.enumerators:
            continue  # names come from the binary anyway
        in_binary = {e.name: e.value for e in enumerators}
        for e in enum.enumerators:
            if e.name not in in_binary:
                yield Finding(e.location, f"enum {enum.name}: {e.name} (= {e.value}) is not in "
                              f"{path}'s enum {enum.name}", "enum-drift", binary=path)
            elif in_binary[e.name] != e.value:
                yield Finding(e.location, f"enum {enum.name}: {e.name} is {e.value} in the catalog "
                              f"but {in_binary[e.name]} in {path} (scripts made from the catalog print "
                              "another name for it there)", "enum-drift", binary=path)
        declared = {e.name for e in enum.enumerators}
        extra = [f"{e.name} = {e.value}" for e in enumerators if e.name not in declared]
        if extra:
            yield Finding(enum.location, f"enum {enum.name} in {path} has enumerator"
                          f"{'s' if len(extra) > 1 else ''} the catalog lacks: {', '.join(extra)}",
                          "enum-drift", binary=path)


def _member_drift(probe_name: str, arg, infos: DebugInfos) -> Iterator[Finding]:
    from probegen.generators.typesource import member_ctype

    struct = arg.ctype.struct_name
    holders = [(path, types) for path, types in infos.types if types.has(struct, ("struct", "union", "typedef"))]
    what = f"probe '{probe_name}' argument {arg.index} '{arg.name}'"
    if not holders:
        yield Finding(arg.location, f"{what}: struct {struct} is not in the debug info of {_binaries(infos)}",
                      "member-drift", probe_name)
    for path, types in holders:
        for member, location in zip(arg.members, arg.member_locations):
            try:
                member_ctype(types, struct, member)
            except InputError as exc:  # no such member (NoSuchMember), or one scripts cannot print
                yield Finding(location, f"{what}: member '{member}': in the debug info of {path}: {exc}",
                              "member-drift", probe_name, path)
