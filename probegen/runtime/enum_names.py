"""Enum names for a traced process, from its own binary's debug info.

A script made from a catalog names enum values as the catalog (or the
binary it was made with) does: one version's names. SPDK v25.09 numbers
two nvmf_tgt_state states the other way round from master, so a master
script prints them swapped on v25.09 (SPDK's own scripts/bpf/gen_enums.sh
greps the sources at trace time for the same reason). Here each enum's
names in the script are replaced with those the traced files' DWARF gives,
where it has the enum; elsewhere the script's stay. Which source each
enum's names came from is said on stderr.

The names stand in a script in one of two forms probegen's generators
write: rows filling a map per enum in a BEGIN block (``@pg_ENUM_name[V] =
"NAME";`` and ``@pg_ENUM_known[V] = 1;``: the enum is in the map's name),
or a chain of comparisons where the name is printed (``if (EXPR == V) {
$VAR = "NAME"; } else if ... else { $KNOWN = 0; }``: the enum is the
catalog's whose names and values the chain has, in order). Each is
rewritten in its own form, the values the binary names and no others.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from probegen.catalog.model import Catalog
from probegen.errors import InputError, NoDebugInfo
from probegen.generators.lines import EnumTable, enum_chain, enum_table, name_literal

_STRING = r'"(?:[^"\\\n]|\\[^\n])*"'
# Each form of enum names, or what must be stepped over as a whole so no
# name inside it is touched (a comment, a string).
_FORMS = (r"(?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))"
          r'|(?P<string>"(?:[^"\\\n]|\\[^\n])*(?:"|$))'
          r"|^(?P<indent>[ \t]*)@pg_(?P<enum>{names})_(?:name|known)\[-?\d+\] = (?:" + _STRING + r"|1);[ \t]*\n"
          r"|^(?P<chain_indent>[ \t]*)if \((?P<expr>[^\n]*?) == -?\d+\) \{ (?P<var>\$\w+) = " + _STRING
          + r"; \}[ \t]*\n(?:[ \t]*else if \((?P=expr) == -?\d+\) \{ (?P=var) = " + _STRING + r"; \}[ \t]*\n)*"
          r"[ \t]*else \{ (?P<known>\$\w+) = 0; \}")
_CHAIN_ROW = re.compile(r"== (-?\d+)\) \{ \$\w+ = (" + _STRING + r"); \}")


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


def _name_map(enum: str) -> str:
    return f"@pg_{enum}_name"


def _known_map(enum: str) -> str:
    return f"@pg_{enum}_known"


class _Forms:
    """The enum name forms of scripts, for one catalog's enums."""

    def __init__(self, catalog: Catalog):
        names = [e.name for e in catalog.enums]
        self.pattern = re.compile(_FORMS.replace("{names}", "|".join(map(re.escape, names)) or "(?!)"), re.S | re.M)
        # A chain is an enum's when it has the catalog's rows (as written in a script).
        self.by_rows: dict[tuple, list[str]] = {}
        for name in names:
            table = enum_table(catalog, name, None)
            if table is not None:
                self.by_rows.setdefault(tuple((v, f'"{name_literal(n)}"') for v, n in table.names), []).append(name)

    def enum_of(self, match: re.Match) -> str | None:
        if match["enum"] is not None:
            return match["enum"]
        if match["known"] is None:
            return None  # a comment or a string
        rows = tuple((int(v), text) for v, text in _CHAIN_ROW.findall(match[0]))
        owners = self.by_rows.get(rows, [])
        return owners[0] if len(owners) == 1 else None  # two enums with the same names: whose is unknown

    def enums_in(self, text: str) -> set[str]:
        return {e for e in map(self.enum_of, self.pattern.finditer(text)) if e is not None}


def mapped_enums(catalog: Catalog, texts) -> list[str]:
    """The catalog's enums whose names the scripts hold, in either form."""
    forms = _Forms(catalog)
    found = set().union(*(forms.enums_in(text) for text in texts))
    return [e.name for e in catalog.enums if e.name in found]


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


def rewrite(text: str, catalog: Catalog, sources: EnumSources) -> str:
    """``text`` with each enum of ``sources.from_binary`` named as its
    table says: map rows replaced where the enum's first row stands, each
    chain replaced in place."""
    if not sources.from_binary:
        return text
    forms = _Forms(catalog)
    done: set[str] = set()

    def replace(match: re.Match) -> str:
        enum = forms.enum_of(match)
        if enum not in sources.from_binary:
            return match[0]
        _, table = sources.from_binary[enum]
        if match["enum"] is not None:  # map rows: all of the enum's at its first
            if enum in done:
                return ""
            done.add(enum)
            indent = match["indent"]
            return "".join(f'{indent}{_name_map(enum)}[{value}] = "{name_literal(name)}";\n'
                           f'{indent}{_known_map(enum)}[{value}] = 1;\n' for value, name in table.names)
        indent = match["chain_indent"]
        rows = enum_chain(table, match["expr"], match["var"])
        return "".join(f"{indent}{row}\n" for row in rows) + f"{indent}else {{ {match['known']} = 0; }}"

    return forms.pattern.sub(replace, text)


def for_process(catalog: Catalog, pid: int, holders: dict, texts: list[str],
                deadline: float | None = None) -> tuple[list[str], list[str]]:
    """(the scripts' texts with the enum maps of the traced files' DWARF,
    messages saying where each enum's names came from). Read are the files
    holding the scripts' probes, the executable first, each opened by root
    through /proc/PID/map_files as trace opens them for their notes, and
    parsed in a child without root (probegen.files.unprivileged), by
    ``deadline``. Should that fail, the scripts keep the catalog's names."""
    from probegen.files.unprivileged import Unprivileged, deadline_in, run_unprivileged
    from probegen.runtime import trace

    enums = mapped_enums(catalog, texts)
    if not enums:
        return texts, []
    files = [trace.mapped_files(pid)[0], *holders.values()]
    descriptors, opened = [], []
    try:
        for mapped in dict.fromkeys(files):
            fd = trace.open_for_reading(pid, mapped)
            if fd is not None:
                descriptors.append(fd)
                opened.append((trace.shown(mapped.name), f"/proc/self/fd/{fd}"))
        found = run_unprivileged(_plain_sources, catalog, enums, opened,
                                 deadline=deadline or deadline_in(trace.STARTUP_SECONDS),
                                 what=f"reading enum names from the debug info of process {pid}'s files",
                                 modules=_READER_MODULES)
        sources = _checked_sources(found, enums, {shown for shown, _ in opened})
    except Unprivileged as exc:
        sources = EnumSources(from_script={enum: str(exc) for enum in enums})
    finally:
        for fd in descriptors:
            os.close(fd)
    return [rewrite(text, catalog, sources) for text in texts], sources.messages(catalog)


# What the child runs with (imported before it gives up root).
_READER_MODULES = ("elftools", "probegen.elf", "probegen.dwarf", "probegen.generators.typesource",
                   "probegen.generators.lines")


def _plain_sources(catalog: Catalog, enums: list[str], opened) -> dict:
    """In the child: from_debug_info as plain data."""
    sources = from_debug_info(catalog, enums, opened)
    return {"binary": {enum: [shown, [list(row) for row in table.names]]
                       for enum, (shown, table) in sources.from_binary.items()},
            "script": sources.from_script}


def _checked_sources(found, enums: list[str], shown_names: set[str]) -> EnumSources:
    """EnumSources from the child's answer, each part checked: the child
    read hostile data, and what it says is data, never trusted as code."""
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
            sources.from_script[enum] = why
    except (KeyError, TypeError, ValueError, AttributeError):
        raise Unprivileged("probegen: error: the enum names read from debug info are not what probegen "
                           "asked for") from None
    for enum in enums:
        if enum not in sources.from_binary and enum not in sources.from_script:
            sources.from_script[enum] = "no file to read"
    return sources
