"""Enum names for a traced process from its own files' debug info, where they
have the enum, else the catalog's (SPDK v25.09 numbers two nvmf_tgt_state
states the other way round from master); stderr says where each came from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from probegen.catalog.model import Catalog
from probegen.errors import InputError, NoDebugInfo
from probegen.generators.lines import EnumTable, enum_table


@dataclass
class EnumSources:
    """Each enum printed: from a file's DWARF (enum -> (file, table)) or the catalog's (enum -> why)."""

    from_binary: dict[str, tuple[str, EnumTable]] = field(default_factory=dict)
    from_catalog: dict[str, str] = field(default_factory=dict)

    def messages(self, catalog: Catalog) -> list[str]:
        by_file: dict[str, list[str]] = {}
        for enum, (shown, table) in self.from_binary.items():
            written = enum_table(catalog, enum, None)
            differs = written is not None and dict(written.names) != dict(table.names)
            by_file.setdefault(shown, []).append(enum + (" (differs from the catalog's)" if differs else ""))
        return ([f"probegen trace: enum names from the debug info of {shown}: {', '.join(enums)}"
                 for shown, enums in by_file.items()]
                + [f"probegen trace: enum names of {enum} from the catalog {catalog.path.name}: {why}"
                   for enum, why in self.from_catalog.items()])


def from_debug_info(catalog: Catalog, enums: list[str], files) -> dict:
    """In the child: each enum's names from the first of ``files`` ((shown name,
    path)) whose DWARF has it, as plain data (_checked_sources reads it)."""
    from probegen.dwarf import DwarfTypes
    from probegen.generators.typesource import TypeSource

    found: dict = {"binary": {}, "script": {}}
    missing = list(enums)
    reasons = []
    for shown, path in files:
        if not missing:
            break
        try:
            types = DwarfTypes.open(path)
        except NoDebugInfo:
            reasons.append(f"{shown} has no debug info")
            continue
        except InputError as exc:  # damaged: the catalog's names are still good enough to trace with
            reasons.append(f"debug info of {shown} unusable: {exc}")
            continue
        with types:
            source = TypeSource(types)
            for enum in list(missing):
                if source.enumerators(enum):
                    found["binary"][enum] = [shown, [list(row) for row in enum_table(catalog, enum, source).names]]
                    missing.remove(enum)
            if missing:
                reasons.append(f"not in the debug info of {shown}")
    for enum in missing:
        found["script"][enum] = "; ".join(reasons) or "no file to read"
    return found


def for_process(catalog: Catalog, pid: int, holders: dict, enums: list[str],
                deadline: float | None = None) -> EnumSources:
    """Where each of ``enums`` is named: the executable and the files holding the
    traced probes, opened by root as trace opens them, parsed in a child
    without root by ``deadline``; should that fail, the catalog's names."""
    from probegen.files.unprivileged import Unprivileged, deadline_in, run_unprivileged
    from probegen.runtime import trace

    if not enums:
        return EnumSources()
    files = [trace.mapped_files(pid)[0], *holders.values()]
    descriptors, opened = [], []
    try:
        for mapped in dict.fromkeys(files):
            fd = trace.open_for_reading(pid, mapped)
            if fd is not None:
                descriptors.append(fd)
                opened.append((trace.shown(mapped.name), f"/proc/self/fd/{fd}"))
        found = run_unprivileged(from_debug_info, catalog, enums, opened,
                                 deadline=deadline or deadline_in(trace.STARTUP_SECONDS),
                                 what=f"reading enum names from the debug info of process {pid}'s files",
                                 modules=_READER_MODULES)
        sources = _checked_sources(found, enums, {shown for shown, _ in opened})
    except Unprivileged as exc:
        sources = EnumSources(from_catalog={enum: str(exc) for enum in enums})
    finally:
        for fd in descriptors:
            os.close(fd)
    return sources


# What the child runs with (imported before it gives up root).
_READER_MODULES = ("elftools", "probegen.elf", "probegen.dwarf", "probegen.generators.typesource",
                   "probegen.generators.lines")


def _checked_sources(found, enums: list[str], shown_names: set[str]) -> EnumSources:
    """EnumSources from the child's answer, each part checked (it read hostile data)."""
    from probegen.files.unprivileged import Unprivileged

    sources = EnumSources()
    try:
        for enum, (shown, rows) in found["binary"].items():
            names = tuple((value, name) for value, name in rows)
            if (enum not in enums or shown not in shown_names or not names
                    or not all(type(v) is int and isinstance(n, str) for v, n in names)
                    or len({v for v, _ in names}) != len(names)):
                raise ValueError(enum)
            sources.from_binary[enum] = (shown, EnumTable(enum, names, any(v < 0 for v, _ in names)))
        for enum, why in found["script"].items():
            if enum not in enums or not isinstance(why, str):
                raise ValueError(enum)
            sources.from_catalog[enum] = why
    except (KeyError, TypeError, ValueError, AttributeError):
        raise Unprivileged("probegen: error: the enum names read from debug info are not what probegen "
                           "asked for") from None
    for enum in enums:
        if enum not in sources.from_binary and enum not in sources.from_catalog:
            sources.from_catalog[enum] = "no file to read"
    return sources
