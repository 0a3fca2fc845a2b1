"""bpftrace scripts from the catalog: one per group, one with every probe,
and one counting hits.

Probes are written ``usdt:__EXE__:NAME``, SPDK's marker convention:
``probegen trace`` (or SPDK's scripts/bpftrace.sh) puts in the file that
holds each probe for the traced process. Targets bpftrace 0.17.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from probegen.catalog import Catalog
from probegen.generators.escape import c_string, printf_literal
from probegen.generators.lines import (
    BPFTRACE_STRLEN_LIMIT, DEFAULT_STRLEN, UNKNOWN_ENUM, Field, ProbeLine, Style,
    enum_tables, probe_lines, script_groups,
)
from probegen.files.output import GeneratedFile
from probegen.generators.render import render
from probegen.generators.spans import SPAN_SCRIPT, render_files as render_span_files
from probegen.generators.typesource import TypeSource

TEMPLATE = "bpftrace.bt.j2"
COUNT_TEMPLATE = "bpftrace_count.bt.j2"
COUNT_SCRIPT = "counts"
# bpftrace 0.17 reads USDT arguments arg0..arg5 only on x86_64
# ("x86_64 doesn't support arg6"); later ones print as this.
MAX_ARG_INDEX = 5
UNREADABLE = "?"
# A script comment `probegen trace` reads to raise bpftrace's string size.
STRLEN_MARKER = "BPFTRACE_STRLEN="
# bpftrace 0.17 gives every str() of a script a BPFTRACE_STRLEN-byte buffer
# on the 512-byte BPF stack, beside the printf's other arguments, and how
# LLVM lays them out is not linear in the sizes. Measured by loading every
# mix of 1-6 strings (max_len 4096) with enum and integer arguments up to
# the 6 readable ones: a budget of 256 loads them all; 320 fails with two
# strings and any other argument (so did 384: 2 x 150 and 3 x 120).
STRING_STACK_BUDGET = 256


@dataclass(frozen=True)
class Printf:
    conditions: tuple[str, ...]  # all must hold for this printf to run
    format: str  # body of the format string literal, escaped
    args: tuple[str, ...]


def conversion(style: Style, size: int) -> str:
    """printf conversion of a value printed in this style (an enum: by
    name, from a map); bpftrace wants 'l' for 8 bytes."""
    long = "l" if size == 8 else ""
    return {Style.SIGNED: f"%{long}d", Style.UNSIGNED: f"%{long}u", Style.HEX: f"0x%{long}x",
            Style.POINTER: "%p", Style.STRING: "%s", Style.ENUM: "%s"}[style]


def name_map(enum_name: str) -> str:
    return f"@pg_{enum_name}_name"


def known_map(enum_name: str) -> str:
    return f"@pg_{enum_name}_known"


def _readable(field: Field) -> bool:
    return field.index <= MAX_ARG_INDEX


def _pointer_variable(field: Field) -> str:
    """The variable holding a member field's struct pointer."""
    return f"$pg_arg{field.index}"


def _value(field: Field) -> str:
    """bpftrace expression of the field's value."""
    if field.is_member:
        value = f"{_pointer_variable(field)}->{field.member}"
        if field.style is Style.ENUM and field.signed and field.size < 8:
            # bpftrace 0.17 reads an enum member as unsigned: -2 would be
            # 4294967294, a key no name is stored under.
            return f"(int{field.size * 8}){value}"
        return value
    return f"arg{field.index}"


def pointer_variables(line: ProbeLine) -> list[str]:
    """Statements giving each struct pointer whose members the probe prints
    a variable, read from its argument once. Reading the argument again in
    every member access (and in every printf branch of enum names) lets
    LLVM share one ctx + offset address that the verifier then refuses
    ("dereference of modified ctx ptr") when bpftrace 0.17 loads the script."""
    statements = {}
    for field in line.fields:
        if field.is_member and _readable(field):
            statements.setdefault(
                field.index, f"{_pointer_variable(field)} = ({field.struct} *)arg{field.index};"
            )
    return list(statements.values())


def _piece(field: Field, known: bool | None, strlen: int) -> tuple[str, list[str]]:
    """Format text and printf arguments of one ``name=value``."""
    label = printf_literal(field.label) + "="
    if not _readable(field):
        return label + UNREADABLE, []
    value = _value(field)
    style = field.style
    if style is Style.STRING and not _is_char_array(field):  # bpftrace prints a char array member as it is
        value = f"str({value}, {min(field.max_len, strlen - 1)})"
    elif style is Style.HEX:
        # Cast to the unsigned type of the width, so a negative value prints
        # its own bits rather than a sign-extended 64-bit pattern.
        value = f"(uint{field.size * 8}){value}"
    elif style is Style.ENUM and known:
        value = f"{name_map(field.enum.name)}[{value}]"
    elif style is Style.ENUM:
        return label + printf_literal(UNKNOWN_ENUM) + "(%d)", [value]
    return label + conversion(style, field.size), [value]


def printfs(line: ProbeLine, strlen: int = DEFAULT_STRLEN) -> list[Printf]:
    """The printf statements of a probe: one, or one per combination of
    known and unknown values of its enum fields (bpftrace 0.17 can neither
    compare map strings nor turn a number into a string)."""
    enums = [f for f in line.fields if f.style is Style.ENUM and _readable(f)]
    result = []
    for combination in itertools.product((True, False), repeat=len(enums)):
        known = dict(zip((id(f) for f in enums), combination))
        text = [printf_literal(line.probe.name)]
        args = ["$t / 1000000000", "$t % 1000000000 / 1000"]
        for field in line.fields:
            piece, piece_args = _piece(field, known.get(id(field)), strlen)
            text.append(piece)
            args.extend(piece_args)
        conditions = tuple(
            ("" if k else "!") + f"{known_map(f.enum.name)}[{_value(f)}]" for f, k in zip(enums, combination)
        )
        result.append(Printf(conditions, "%llu.%06llu: " + " ".join(text) + "\\n", tuple(args)))
    return result


def script_strlen(lines: list[ProbeLine]) -> int:
    """BPFTRACE_STRLEN for a script: what its longest max_len asks for, but
    no more than lets every probe's strings fit on bpftrace's stack (the
    default 64 always does: at most 6 arguments are readable). A string
    prints at most BPFTRACE_STRLEN - 1 characters."""
    wanted = max((f.max_len + 1 for l in lines for f in l.fields if _reads_string(f)), default=DEFAULT_STRLEN)
    limit = min([BPFTRACE_STRLEN_LIMIT] + [
        STRING_STACK_BUDGET // count for count in (sum(map(_reads_string, l.fields)) for l in lines) if count
    ])
    return max(DEFAULT_STRLEN, min(wanted, limit))


def _is_char_array(field: Field) -> bool:
    """A char array member, which bpftrace prints with %s as it is; a char
    pointer (argument or member) is read with str()."""
    return field.is_member and not field.ctype.pointer_sized


def _reads_string(field: Field) -> bool:
    return field.style is Style.STRING and not _is_char_array(field) and _readable(field)


def render_script(catalog: Catalog, group: str, probes, types: TypeSource | None = None) -> str:
    lines = probe_lines(catalog, probes, types)
    strlen = script_strlen(lines)
    structs = list(dict.fromkeys(s for l in lines for s in l.structs))
    return render(
        TEMPLATE,
        catalog=catalog,
        group=group,
        lines=[{"line": l, "printfs": printfs(l, strlen), "unreadable": _unreadable(l),
                "variables": pointer_variables(l)} for l in lines],
        enums=[
            {"name_map": name_map(t.name), "known_map": known_map(t.name),
             "names": [(v, c_string(n)) for v, n in t.names]}
            for t in enum_tables(lines)
        ],
        definitions=types.definitions(structs) if types is not None and structs else "",
        strlen=strlen,
        cut=[f"{l.probe.name} {f.label}" for l in lines for f in l.fields if _reads_string(f) and f.max_len >= strlen],
        strlen_marker=STRLEN_MARKER,
        default_strlen=DEFAULT_STRLEN,
        max_arg=MAX_ARG_INDEX,
    )


def _unreadable(line: ProbeLine) -> list[str]:
    return [f.label for f in line.fields if not _readable(f)]


def render_counts(catalog: Catalog) -> str:
    return render(COUNT_TEMPLATE, catalog=catalog, probes=catalog.probes)


def render_files(catalog: Catalog, output: Path, types: TypeSource | None = None) -> list[GeneratedFile]:
    """``GROUP.bt`` per group, ``all.bt``, ``counts.bt``, and ``spans.bt``
    when the catalog declares spans (generators.spans), in ``output``."""
    output = Path(output)
    files = [
        GeneratedFile(output / f"{stem}.bt", render_script(catalog, stem, probes, types), executable=True)
        for stem, probes in script_groups(catalog, reserved=("all", COUNT_SCRIPT, SPAN_SCRIPT))
    ]
    files.append(GeneratedFile(output / f"{COUNT_SCRIPT}.bt", render_counts(catalog), executable=True))
    files.extend(render_span_files(catalog, output))
    return files
