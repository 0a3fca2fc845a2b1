"""A generated script made again for the traced process: its probes that the process
has, each line fitted to their notes (SPDK v25.09's ``nvmf_ctrlr_destruct`` passes one
argument more than master's, and numbers two nvmf_tgt_state states the other way round),
enum names from its files' debug info, else the catalog's. A differing count prints
every argument by position, a differing size or sign that argument as the note has it,
with a warning; what prints the same value (``-4@$0`` for a ``uint64_t``) is no difference."""

import itertools
import re
import sys
from dataclasses import replace

from probegen.catalog.ctype import CType, Kind, integer_type, parse_ctype
from probegen.errors import InputError, NoDebugInfo, printable
from probegen.files.marker import has_marker
from probegen.generators.lines import EnumTable, Field, ProbeLine, Style, enum_table, probe_line, style_of
from probegen.runtime import trace

# A script made with --binary reads struct members through such a cast.
_STRUCT_CAST = re.compile(r"= \((?:struct|union) \w+ \*\)arg\d+;")
# The header line of a line script probegen made (templates/bpftrace.bt.j2).
_GENERATED = re.compile(r"^// Made from (?P<catalog>.+?): change the catalog and regenerate\. "
                        r"(?P<group>\S+): \d+ probes? of provider \S+, a line per hit\.$", re.M)


def _integer(column) -> CType:
    """An integer holding the argument at every site: the widest, signed if one is."""
    return parse_ctype(integer_type(max(arg.size for arg in column), any(arg.signed for arg in column)))


def _shown(column) -> str:
    sizes = sorted({arg.size for arg in column})
    signs = sorted({"signed" if arg.signed else "unsigned" for arg in column})
    return f"{' or '.join(map(str, sizes))} byte{'s' if sizes[-1] > 1 else ''}, {' or '.join(signs)}"


def _carries(ctype, arg) -> bool:
    """Whether the catalog's type prints the site's argument (NoteFacts) as bpftrace reads it:
    the note's type, a narrower integer it holds, or a literal it holds (not a
    negative one in an unsigned type: bpftrace prints that extended to 64 bits)."""
    return not arg.floating and (ctype.carries(arg.size, arg.signed) or (
        arg.constant is not None and ctype.kind is Kind.INTEGER and ctype.holds_constant(arg.constant)
        and not (arg.constant < 0 and ctype.signed is False)))


def fit(catalog, probe, sites, enums: dict[str, EnumTable]) -> tuple[ProbeLine, list[str]]:
    """(the probe's line as ``sites`` pass its arguments, warnings); ``enums``: tables to print by."""
    line = probe_line(catalog, probe)
    fields = [replace(f, style=Style.ENUM, enum=enums[f.ctype.enum_name])  # also an enum the catalog lists no names of
              if f.ctype.enum_name in enums and f.style is not Style.HEX else f for f in line.fields]
    counts = {len(site) for site in sites}
    columns = [[arg for arg in column if arg is not None] for column in itertools.zip_longest(*sites)]
    floating = sorted({f"arg{i}" for i, column in enumerate(columns) if any(arg.floating for arg in column)})
    warnings = [f"{probe.name}: {', '.join(floating)} floating point in the process's note: "
                "printed as the integer of its bits"] if floating else []  # bpftrace reads USDT arguments as integers
    if counts != {line.arg_count}:
        fields = [Field(f"arg{i}", style_of(ctype), i, ctype) for i, ctype in enumerate(map(_integer, columns))]
        note, most = " or ".join(str(c) for c in sorted(counts)), max(counts)
        warnings.append(f"{probe.name}: the process's note passes {note} arguments, the catalog {line.arg_count} "
                        f"(arg0 included): printed by position (arg0..arg{most - 1}) as the note has them")
        return ProbeLine(probe, tuple(fields), most), warnings
    for number, field in enumerate(fields):
        column = columns[field.index]  # every field's argument is in each site (no members: no DWARF read as root)
        if all(_carries(field.ctype, arg) for arg in column):
            continue
        warnings.append(f"{probe.name}: argument {field.label} is {field.ctype.name} in the catalog "
                        f"({field.size} bytes), {_shown(column)} in the process's note: "
                        "printed as the note has it")
        if field.ctype.kind is not Kind.ENUM:  # an enum's value is named whatever its width
            integer = _integer(column)
            fields[number] = replace(field, ctype=integer, style=style_of(integer))
    return ProbeLine(probe, tuple(fields), line.arg_count), warnings


def generated_group(script: trace.Script, catalog) -> str | None:
    """The group of a line script probegen made from ``catalog``, else None."""
    head = script.text[:4096]
    match = _GENERATED.search(head)
    if catalog is None or match is None or not has_marker(head.encode()) or _STRUCT_CAST.search(script.text):
        return None  # one printing struct members (--binary) runs as written: trace parses no DWARF as root
    return match["group"] if match["catalog"] == catalog.path.name else None


def _say(message: str) -> None:
    print(printable(message), file=sys.stderr)


def regenerate(pid: int, scripts: list[trace.Script], groups: dict, catalog, debug_info: bool, big: bool,
               holders: dict, deadline: float, tids: bool) -> tuple[list[trace.Script], dict]:
    """(the scripts, the generated line scripts of ``groups`` made again for this process; each such
    probe's labels). ``tids``: the lines name their thread too (``PROBE [tid TID] ...``), for trace's own reading."""
    if not groups:  # hand-written scripts only: jinja2 is not imported
        return scripts, {}
    from probegen.generators.bpftrace import render_lines

    chosen = {}
    for number in groups:
        keys = sorted(trace.wanted_probes(scripts[number]), key=lambda k: k[1])
        for absent, where in (([k[1] for k in keys if k not in holders], f"process {pid}"),
                              ([k[1] for k in keys if catalog.probe(k[1]) is None], catalog.path.name)):
            if absent:
                _say(f"probegen trace: not in {where}, not traced: {', '.join(absent)}")
        held = {name: [k for k in same if k in holders] for name, same in itertools.groupby(keys, lambda k: k[1])}
        chosen[number] = [(p, holders[k][1]) for p in catalog.probes for k in held.get(p.name, ())]  # not probes x keys
    enums = list(dict.fromkeys(a.ctype.enum_name for pairs in chosen.values() for p, _ in pairs
                               for a in p.note_args if a.ctype.enum_name and not a.hex))
    tables = _enum_tables(catalog, pid, holders, enums, deadline) if debug_info and enums else {}
    scripts, labels = list(scripts), {}
    for number, pairs in chosen.items():
        lines = []
        for probe, sites in pairs:
            line, warnings = fit(catalog, probe, sites, tables)
            lines.append(replace(line, tid=tids))
            labels[probe.name] = [f.label for f in line.fields]
            for warning in warnings:
                _say(f"probegen trace: warning: {warning}")
        scripts[number] = scripts[number]._replace(text=render_lines(catalog, groups[number], lines, big_strings=big))
    return scripts, labels


def from_debug_info(catalog, enums: list[str], files) -> dict:
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


def _enum_tables(catalog, pid: int, holders: dict, enums: list[str], deadline: float) -> dict[str, EnumTable]:
    """Each enum's table from the debug info of the executable and the files holding the traced
    probes, parsed in a child without root; says where each of ``enums`` is named."""
    from probegen.files.unprivileged import Unprivileged, run_unprivileged

    files = [trace.mapped_files(pid)[0], *(mapped for mapped, _ in holders.values())]
    try:
        with trace.opened(pid, files) as opened:
            named = [(trace.shown(mapped.name), path) for mapped, path in opened]
            found = run_unprivileged(from_debug_info, catalog, enums, named, deadline=deadline,
                                     what=f"reading enum names from the debug info of process {pid}'s files",
                                     modules=("elftools", "probegen.elf", "probegen.dwarf"))
    except Unprivileged as exc:
        found = {"binary": {}, "why": str(exc)}
    tables, by_file = {}, {}  # by_file: the enums each file names
    try:  # each part of the child's answer checked (it read hostile data)
        if not isinstance(why := found["why"], str):
            raise ValueError(why)
        for enum, (shown, rows) in found["binary"].items():
            names = tuple((value, name) for value, name in rows)
            values = {v for v, n in names if type(v) is int and isinstance(n, str)}  # each once, each named
            if enum not in enums or shown not in {s for s, _ in named} or not names or len(values) != len(names):
                raise ValueError(enum)
            tables[enum] = EnumTable(enum, names, any(v < 0 for v, _ in names))
            written = enum_table(catalog, enum, None)
            differs = written is not None and dict(written.names) != dict(names)
            by_file.setdefault(shown, []).append(enum + (" (differs from the catalog's)" if differs else ""))
    except (KeyError, TypeError, ValueError, AttributeError):
        tables, by_file = {}, {}
        why = "probegen: error: the enum names read from debug info are not what probegen asked for"
    for shown, done in by_file.items():
        _say(f"probegen trace: enum names from the debug info of {shown}: {', '.join(done)}")
    for enum in enums:
        if enum not in tables:
            _say(f"probegen trace: enum names of {enum} from the catalog {catalog.path.name}: {why}")
    return tables
