"""Enum names for a traced process from its own files' debug info, else the catalog's
(SPDK v25.09 numbers two nvmf_tgt_state states the other way round from master)."""

from probegen.catalog.model import Catalog
from probegen.errors import InputError, NoDebugInfo
from probegen.generators.lines import EnumTable, enum_table

# What the child runs with (imported before it gives up root).
_READER_MODULES = ("elftools", "probegen.elf", "probegen.dwarf", "probegen.generators.lines")


def from_debug_info(catalog: Catalog, enums: list[str], files) -> dict:
    """In the child: each enum's names from the first of ``files`` ((shown name,
    path)) whose DWARF has it, and why the others have none, as plain data."""
    from probegen.dwarf import DwarfTypes

    found: dict = {}
    reasons = []
    for shown, path in files:
        missing = [enum for enum in enums if enum not in found]
        if not missing:
            break
        try:
            types = DwarfTypes.open(path)
        except InputError as exc:  # damaged: the catalog's names are still good enough to trace with
            reasons.append(f"{shown} has no debug info" if isinstance(exc, NoDebugInfo)
                           else f"debug info of {shown} unusable: {exc}")
            continue
        with types:
            for enum in missing:
                if types.enumerators(enum):
                    found[enum] = [shown, enum_table(catalog, enum, types).names]
        if any(enum not in found for enum in enums):
            reasons.append(f"not in the debug info of {shown}")
    return {"binary": found, "why": "; ".join(reasons) or "no file to read"}


def for_process(catalog: Catalog, pid: int, holders: dict, enums: list[str],
                deadline: float) -> tuple[dict[str, EnumTable], list[str]]:
    """(each enum's table from debug info, the lines saying where each of ``enums`` is named):
    from the executable and the files holding the traced probes, parsed in a child without root."""
    from probegen.files.unprivileged import Unprivileged, run_unprivileged
    from probegen.runtime import trace

    if not enums:
        return {}, []
    files = [trace.mapped_files(pid)[0], *holders.values()]
    try:
        with trace.opened(pid, files) as opened:
            named = [(trace.shown(mapped.name), path) for mapped, path in opened]
            found = run_unprivileged(from_debug_info, catalog, enums, named,
                                     deadline=deadline,
                                     what=f"reading enum names from the debug info of process {pid}'s files",
                                     modules=_READER_MODULES)
        from_binary, why = _checked_sources(found, enums, {shown for shown, _ in named})
    except Unprivileged as exc:
        from_binary, why = {}, str(exc)
    by_file: dict[str, list[str]] = {}
    for enum, (shown, table) in from_binary.items():
        written = enum_table(catalog, enum, None)
        differs = written is not None and dict(written.names) != dict(table.names)
        by_file.setdefault(shown, []).append(enum + (" (differs from the catalog's)" if differs else ""))
    return ({enum: table for enum, (_, table) in from_binary.items()},
            [f"probegen trace: enum names from the debug info of {shown}: {', '.join(done)}"
             for shown, done in by_file.items()]
            + [f"probegen trace: enum names of {enum} from the catalog {catalog.path.name}: {why}"
               for enum in enums if enum not in from_binary])


def _checked_sources(found, enums: list[str], shown_names: set[str]) -> tuple[dict, str]:
    """({enum: (shown name, EnumTable)}, why the others have none) from the
    child's answer, each part checked (it read hostile data)."""
    from probegen.files.unprivileged import Unprivileged

    from_binary = {}
    try:
        for enum, (shown, rows) in found["binary"].items():
            names = tuple((value, name) for value, name in rows)
            values = {v for v, n in names if type(v) is int and isinstance(n, str)}  # each once, each named
            if enum not in enums or shown not in shown_names or not names or len(values) != len(names):
                raise ValueError(enum)
            from_binary[enum] = (shown, EnumTable(enum, names, any(v < 0 for v, _ in names)))
        if not isinstance(found["why"], str):
            raise ValueError(found["why"])
    except (KeyError, TypeError, ValueError, AttributeError):
        raise Unprivileged("probegen: error: the enum names read from debug info are not what probegen "
                           "asked for") from None
    return from_binary, found["why"]
