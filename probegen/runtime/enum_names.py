"""Enum names for a traced process, from its own binary's debug info.

A script made from a catalog fills a map per enum (``@pg_ENUM_name[V] =
"NAME";`` and ``@pg_ENUM_known[V] = 1;``, generators.bpftrace) with the
catalog's names: those of one version. SPDK v25.09 numbers two
nvmf_tgt_state states the other way round from master, so a master script
prints them swapped on v25.09 (SPDK's own scripts/bpf/gen_enums.sh greps
the sources at trace time for the same reason). Here the rows of each
catalog enum are replaced with the names the traced files' DWARF gives,
where they have it; elsewhere the script's rows stay. Which source each
enum's names came from is said on stderr.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from probegen.catalog.model import Catalog
from probegen.errors import InputError, NoDebugInfo
from probegen.generators.bpftrace import known_map, name_map
from probegen.generators.escape import c_string
from probegen.generators.lines import EnumTable, enum_table

# A row of an enum map as generators.bpftrace writes it, or what must be
# stepped over as a whole so no row inside it is touched.
_ROW = (r"(?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))"
        r'|(?P<string>"(?:[^"\\\n]|\\[^\n])*(?:"|$))'
        r'|^(?P<indent>[ \t]*)@pg_(?P<enum>{names})_(?:name|known)\[-?\d+\] = (?:"(?:[^"\\\n]|\\[^\n])*"|1);[ \t]*\n')


@dataclass
class EnumSources:
    """Each catalog enum a script maps: its names from a file's DWARF
    (enum -> (file, table)), or kept as the script has them (enum -> why)."""

    from_binary: dict[str, tuple[str, EnumTable]] = field(default_factory=dict)
    from_script: dict[str, str] = field(default_factory=dict)

    def messages(self, catalog: Catalog) -> list[str]:
        lines = []
        by_file: dict[str, list[str]] = {}
        for enum, (shown, table) in self.from_binary.items():
            written = enum_table(catalog, enum, None)
            differs = written is not None and dict(written.names) != dict(table.names)
            by_file.setdefault(shown, []).append(enum + (" (differs from the catalog's)" if differs else ""))
        for shown, enums in by_file.items():
            lines.append(f"probegen trace: enum names from the debug info of {shown}: {', '.join(enums)}")
        for enum, why in self.from_script.items():
            lines.append(f"probegen trace: enum names of {enum} from the catalog {catalog.path.name} "
                         f"(as the script has them): {why}")
        return lines


def mapped_enums(catalog: Catalog, texts) -> list[str]:
    """The catalog's enums whose name maps the scripts fill."""
    found = []
    for enum in catalog.enums:
        row = re.compile(rf"^[ \t]*{re.escape(name_map(enum.name))}\[", re.M)
        if any(row.search(text) for text in texts):
            found.append(enum.name)
    return found


def from_debug_info(catalog: Catalog, enums: list[str], files) -> EnumSources:
    """Each enum's names from the first of ``files`` ((shown name, path to
    open)) whose DWARF has it."""
    from probegen.dwarf import DwarfTypes
    from probegen.generators.typesource import TypeSource

    sources = EnumSources()
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
                    sources.from_binary[enum] = (shown, enum_table(catalog, enum, source))
                    missing.remove(enum)
            if missing:
                reasons.append(f"not in the debug info of {shown}")
    for enum in missing:
        sources.from_script[enum] = "; ".join(reasons) or "no file to read"
    return sources


def rewrite(text: str, sources: EnumSources) -> str:
    """``text`` with each enum of ``sources.from_binary`` mapped as its
    table says: its rows replaced where its first row stands."""
    if not sources.from_binary:
        return text
    pattern = re.compile(_ROW.format(names="|".join(map(re.escape, sources.from_binary))), re.S | re.M)
    done: set[str] = set()

    def replace(match: re.Match) -> str:
        enum = match["enum"]
        if enum is None:
            return match[0]
        if enum in done:
            return ""
        done.add(enum)
        _, table = sources.from_binary[enum]
        return "".join(f'{match["indent"]}{name_map(enum)}[{value}] = "{c_string(name)}";\n'
                       f'{match["indent"]}{known_map(enum)}[{value}] = 1;\n' for value, name in table.names)

    return pattern.sub(replace, text)


def for_process(catalog: Catalog, pid: int, holders: dict, texts: list[str]) -> tuple[list[str], list[str]]:
    """(the scripts' texts with the enum maps of the traced files' DWARF,
    messages saying where each enum's names came from). Read are the files
    holding the scripts' probes, the executable first, each through
    /proc/PID/map_files as trace reads their notes."""
    from probegen.runtime import trace

    enums = mapped_enums(catalog, texts)
    if not enums:
        return texts, []
    files = [trace.mapped_files(pid)[0], *holders.values()]
    descriptors = []
    try:
        opened = []
        for mapped in dict.fromkeys(files):
            fd = trace._open_mapped(pid, mapped)
            if fd is not None:
                descriptors.append(fd)
                opened.append((trace.shown(mapped.name), f"/proc/self/fd/{fd}"))
        sources = from_debug_info(catalog, enums, opened)
    finally:
        for fd in descriptors:
            os.close(fd)
    return [rewrite(text, sources) for text in texts], sources.messages(catalog)
