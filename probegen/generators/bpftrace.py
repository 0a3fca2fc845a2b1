"""bpftrace scripts from the catalog: one per group, one with every probe,
and one counting hits; and the programs `probegen trace` makes of them for
one process (render_lines).

Probes are written ``usdt:*:PROVIDER:NAME``, so one script runs four ways:
``bpftrace -p PID script.bt``, ``./script.bt -p PID`` (its shebang), SPDK's
``scripts/bpftrace.sh PID script.bt`` (bpftrace resolves ``*`` to the files
the process maps), and ``probegen trace -p PID script.bt``. Scripts have no
BEGIN or END block: SPDK's bpftrace.sh appends its own and bpftrace allows
one of each. So enum names are looked up where they are printed.

Two forms of a probe's block. The whole form (whole_body), as one writes
by hand: one printf per hit, a string read by one str(): whole on bpftrace
0.21 and later, its first 63 characters on 0.17. The pieces form
(pieces_body), for trace on bpftrace 0.17 and for a probe whose one printf
0.17's stack cannot hold: strings read 63 characters at a time, a piece
after the first only when the ones before it hold no NUL (8-byte words
tested for a zero byte), never from past the string's end; a hit whose
pieces do not fit one printf prints several lines, each one printf, each
naming the probe, the thread and its place (``PROBE [tid TID K/N]``), so
trace joins them (runtime/hitlines.py).
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from pathlib import Path

from probegen.catalog import Catalog
from probegen.generators.escape import printf_literal
from probegen.bpftrace import BIG_STRLEN, BPF_STACK, DEFAULT_STRLEN, MAX_ARG_INDEX, UNREADABLE, conversion
from probegen.generators.lines import (
    UNKNOWN_ENUM, Field, ProbeLine, Style, enum_lookup, name_literal, probe_lines, script_groups,
)
from probegen.files.output import GeneratedFile
from probegen.generators.render import render
from probegen.generators.spans import SPAN_SCRIPT, render_files as render_span_files
from probegen.generators.typesource import TypeSource

KIND, WRITES_DIRECTORY = "bpftrace", True  # the output it is (generators.outputs)
TEMPLATE = "bpftrace.bt.j2"
COUNT_TEMPLATE = "bpftrace_count.bt.j2"
COUNT_SCRIPT = "counts"
# Characters one str() reads at bpftrace's default BPFTRACE_STRLEN of 64
# (one byte is the NUL); every str() takes those 64 bytes of stack.
PIECE = DEFAULT_STRLEN - 1
PIECE_BYTES = DEFAULT_STRLEN
# One printf takes its arguments' bytes of the stack, the timestamp
# included, and one more copy of its largest string (the str() buffer).
# Measured on bpftrace 0.17: $t, timestamp, four integers and six 64-byte
# strings (504 bytes counted this way) load, seven (568) do not; variables
# take 8 bytes each (see _limit). nvmf_subsystem_change_state_done's one
# printf (its subnqn's first piece, two enum names, status: 280 bytes
# counted, against 272 with a margin of 32) loads with fifteen more
# integers (400 counted) and not sixteen; at 32 it printed three lines a
# hit through probegen trace, one of the costs bench_trace_overhead measures.
STACK_MARGIN = 24
# Variables of the loop that finds a string's full pieces (_full_pieces).
LOOP_VARIABLES = 5
WORD_BYTES = 8
# The verifier follows each string's NUL-finding loop once per way the
# loops before it ended, so its work grows with the product of the pieces
# a probe reads. Measured on bpftrace 0.17 (1,000,000-instruction limit):
# 8 x 8 x 8 and 16 x 16 pieces load, 16 x 16 x 16 and 66 x 66 do not; one
# string of 66 loads. Longer strings are cut (the script's header says).
VERIFIER_PIECES = 512
# Tests a 64-bit word for a zero byte: (w - ONES) & ~w & HIGHS is non-zero
# exactly when one of its bytes is 0.
ONES = "0x0101010101010101"
HIGHS = "0x8080808080808080"


@dataclass(frozen=True)
class Item:
    """A run of a line's printf: format text, its arguments, and their stack
    bytes (``copy``: the extra buffer the largest argument's read needs)."""

    format: str
    args: tuple[str, ...] = ()
    size: int = 0
    copy: int = 0


@dataclass(frozen=True)
class Printf:
    format: str  # body of the format string literal, escaped
    args: tuple[str, ...]


@dataclass(frozen=True)
class Variant:
    """The printf calls a hit makes when all ``conditions`` hold (the last
    variant of a probe: otherwise)."""

    conditions: tuple[str, ...]
    printfs: tuple[Printf, ...]


def _readable(field: Field) -> bool:
    return max(field.index, field.length or 0) <= MAX_ARG_INDEX


def _buf_length(field: Field) -> str:
    """The length of a string with a length, as read: the process's, a
    negative one (or one past 2**63) 0, a longer one max_len."""
    length, most = f"arg{field.length}", min(field.max_len, BIG_STRLEN - 1)
    return f"(int64){length} < 0 ? 0 : ({length} > {most} ? {most} : {length})"


def _buf(field: Field) -> str:
    """buf() of a string with a length, printed with %r: exactly that many
    bytes, those not printable as \\xNN, so a hit stays one line (0.17
    reads DEFAULT_STRLEN at most; the pieces form reads them all)."""
    return f"buf({_value(field)}, {_buf_length(field)})"


def _pointer_variable(field: Field) -> str:
    """The variable holding a member field's struct pointer."""
    return f"$pg_arg{field.index}"


def _value(field: Field) -> str:
    """bpftrace expression of the field's value."""
    if field.is_member:
        value = f"{_pointer_variable(field)}->{field.member}"
        if field.style is Style.ENUM and field.signed and field.size < 8:
            # bpftrace 0.17 reads an enum member as unsigned: -2 would be
            # 4294967294, a value no name is given for.
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


def _is_char_array(field: Field) -> bool:
    """A char array member, which bpftrace prints with %s as it is; a char
    pointer (argument or member) is read with str()."""
    return field.is_member and not field.ctype.pointer_sized


def _reads_string(field: Field) -> bool:
    """A string read by str() (one with a length is read by buf())."""
    return field.style is Style.STRING and field.length is None and not _is_char_array(field) and _readable(field)


def pieces(field: Field) -> int:
    """str() reads that print the string field whole, up to its max_len."""
    return -(-field.max_len // PIECE)


def read_pieces(line: ProbeLine) -> dict[int, int]:
    """Pieces read of each string field of the line: all of them, unless
    their product passes VERIFIER_PIECES; then the longest strings are cut
    (a single string never is)."""
    counts = {n: pieces(f) for n, f in enumerate(line.fields) if _reads_string(f)}
    while len(counts) > 1 and math.prod(counts.values()) > VERIFIER_PIECES:
        longest = max(counts, key=lambda n: (counts[n], -n))
        counts[longest] -= 1
    return counts


def cut_strings(line: ProbeLine) -> list[str]:
    """'LABEL at N characters' for each string field the probe cuts."""
    return [f"{line.fields[n].label} at {count * PIECE}" for n, count in read_pieces(line).items()
            if count < pieces(line.fields[n])]


def _round(size: int) -> int:
    return -(-size // WORD_BYTES) * WORD_BYTES


def _string_variables(number: int) -> tuple[str, str]:
    """(the string's address, how many of its pieces are known full)."""
    return f"$pg_s{number}", f"$pg_f{number}"


def _full_pieces(address: str, full: str, count: int) -> list[str]:
    """Statements counting into ``full`` the leading pieces of the string at
    ``address`` that hold no NUL, up to ``count`` - 1 of them: a piece after
    those is past the string's end and is not read. A piece's 63 bytes and
    the next byte are tested as eight words; a failed read gives zeros,
    which end the count. A loop, not unroll(): bpftrace 0.17 gives every
    unrolled read its own 8 bytes of stack."""
    words = _round(PIECE) // WORD_BYTES
    return [
        f"{full} = 0;",
        "$pg_more = 1;",
        "$pg_zero = (uint64)0;",
        "$pg_words = (uint64)0;",
        f"$pg_at = {address};",
        f"while ($pg_more && $pg_words < {words * (count - 1)}) {{",
        "	$pg_word = *(uint64 *)uptr($pg_at);",
        f"	$pg_zero = $pg_zero | (($pg_word - {ONES}) & ~$pg_word);",
        f"	$pg_at = $pg_at + {WORD_BYTES};",
        "	$pg_words = $pg_words + 1;",
        f"	if ($pg_words % {words} == 0) {{",
        f"		if ($pg_zero & {HIGHS}) {{ $pg_more = 0; }} "
        f"else {{ {full} = {full} + 1; $pg_at = $pg_at - {_round(PIECE) - PIECE}; }}",
        "	}",
        "}",
    ]


def _string_items(field: Field, number: int, shown: int) -> list[Item]:
    """The first ``shown`` pieces of a string field."""
    address, full = _string_variables(number)
    items = []
    for k in range(shown):
        length = min(PIECE, field.max_len - k * PIECE)
        where = f"uptr({address})" if k == 0 else f"uptr({full} >= {k} ? {address} + {k * PIECE} : 0)"
        items.append(Item("%s", (f"str({where}, {length})",), PIECE_BYTES, PIECE_BYTES))  # prints {length} at most
    return items


def _buf_piece(field: Field, number: int, start: int) -> str:
    """buf() of the bytes of a string with a length from ``start`` on, up
    to DEFAULT_STRLEN of them (none past its length)."""
    n, at = f"$pg_n{number}", _value(field) + (f" + {start}" if start else "")
    rest = f"({n} > {start} ? {n} - {start} : 0)" if start else n
    return f"buf({at}, {n} > {start + PIECE_BYTES} ? {PIECE_BYTES} : {rest})"


def _field_items(field: Field, number: int, known: bool | None, shown: int | None) -> list[Item]:
    """Items of one ``name=value``; ``shown``: pieces of a string field
    (read_pieces)."""
    label = " " + printf_literal(field.label) + "="
    if not _readable(field):
        return [Item(label + UNREADABLE)]
    value = _value(field)
    style = field.style
    if _reads_string(field):
        return [Item(label)] + _string_items(field, number, shown)
    if field.length is not None:  # DEFAULT_STRLEN bytes a buf(), the length in $pg_nN (statements)
        size = PIECE_BYTES + WORD_BYTES
        return [Item(label)] + [Item("%r", (_buf_piece(field, number, k),), size, size)
                                for k in range(0, min(field.max_len, BIG_STRLEN - 1), PIECE_BYTES)]
    if style is Style.STRING:  # a char array member: bpftrace reads and prints it whole
        size = _round(field.ctype.size)
        return [Item(label + "%s", (value,), size, size)]
    if style is Style.ENUM and known:
        return [Item(label + "%s", (f"$pg_e{number}",), PIECE_BYTES)]
    if style is Style.ENUM:
        return [Item(label + printf_literal(UNKNOWN_ENUM) + "(%d)", (value,), WORD_BYTES)]
    if style is Style.HEX:
        # Cast to the unsigned type of the width, so a negative value prints
        # its own bits rather than a sign-extended 64-bit pattern.
        value = f"(uint{field.size * 8}){value}"
    return [Item(label + conversion(style.value, field.size), (value,), WORD_BYTES)]


def _line_items(line: ProbeLine, known: dict, shown: dict) -> list[Item]:
    """The line's items, ``shown`` (or all read_pieces) pieces of each string."""
    shown = {**read_pieces(line), **shown}
    items = [Item("%llu.%06llu: " + printf_literal(line.probe.name) + " [tid %d]" * line.tid,
                  ("$t / 1000000000", "$t % 1000000000 / 1000") + ("tid",) * line.tid, (2 + line.tid) * WORD_BYTES)]
    for number, field in enumerate(line.fields):
        items.extend(_field_items(field, number, known.get(number), shown.get(number)))
    return items


def _stack(items: list[Item]) -> int:
    return sum(i.size for i in items) + max((i.copy for i in items), default=0)


def _limit(line: ProbeLine) -> int:
    """Stack bytes left for one printf of the probe: BPF_STACK less its
    variables (bpftrace 0.17 keeps each on the stack: 8 bytes, an enum
    name's string 64) and STACK_MARGIN."""
    strings = [f for f in line.fields if _reads_string(f)]
    enums = sum(1 for f in line.fields if f.style is Style.ENUM and _readable(f))
    bufs = sum(1 for f in line.fields if f.length is not None and _readable(f))
    scalars = (1 + len(pointer_variables(line)) + 2 * len(strings) + enums + bufs
               + (LOOP_VARIABLES if any(c > 1 for c in read_pieces(line).values()) else 0))
    return BPF_STACK - STACK_MARGIN - WORD_BYTES * scalars - PIECE_BYTES * enums


def _printf(items: list[Item]) -> Printf:
    """One printf of the items: one whole line."""
    return Printf("".join(i.format for i in items) + "\\n", tuple(a for i in items for a in i.args))


def _tag(line: ProbeLine, part: int, parts: int) -> Item:
    """The start of line ``part`` of a hit printed in ``parts`` lines: the
    hit's timestamp, probe, thread and place; a line after the first
    continues the text of the one before it after its ``+``."""
    text = f"%llu.%06llu: {printf_literal(line.probe.name)} [tid %d {part}/{parts}]" + (" +" if part > 1 else "")
    return Item(text, ("$t / 1000000000", "$t % 1000000000 / 1000", "tid"), 3 * WORD_BYTES)


def _records(line: ProbeLine, known: dict, limit: int) -> list[Printf]:
    """The hit's line as one printf if it fits ``limit``, else as several
    lines, each one printf: whole fields while they fit, a field too long
    for a line of its own split between its pieces."""
    items = _line_items(line, known, {})
    if _stack(items) <= limit:
        return [_printf(items)]
    read = read_pieces(line)
    fields = [_field_items(f, n, known.get(n), read.get(n)) for n, f in enumerate(line.fields)]
    room = _tag(line, 2, 2)  # every line's tag takes the same stack
    groups: list[list[Item]] = [[]]
    for field in fields:
        if groups[-1] and _stack([room, *groups[-1], *field]) > limit:
            groups.append([])
        for item in field:
            if groups[-1] and _stack([room, *groups[-1], item]) > limit:
                groups.append([])
            groups[-1].append(item)
    return [_printf([_tag(line, n, len(groups)), *group]) for n, group in enumerate(groups, 1)]


def _one_record_layout(line: ProbeLine, known: dict) -> dict[int, int] | None:
    """Pieces per string field for a line that fits one printf when its
    strings are short enough: as many as fit, shared out in turn."""
    read = read_pieces(line)
    strings = list(read)
    shown = {n: 0 for n in strings}
    if not strings or _stack(_line_items(line, known, shown)) > _limit(line):
        return None
    while True:
        grown = False
        for n in strings:
            if shown[n] < read[n]:
                trial = {**shown, n: shown[n] + 1}
                if _stack(_line_items(line, known, trial)) <= _limit(line):
                    shown, grown = trial, True
        if not grown:
            break
    return shown if all(shown.values()) else None


def variants(line: ProbeLine) -> list[Variant]:
    """What a hit prints: one variant per combination of known and unknown
    values of its enum fields (bpftrace 0.17 cannot turn a number into a
    string), and, where the whole line does not fit one printf, first a
    one-printf variant for hits whose strings are short enough for it."""
    enums = [n for n, f in enumerate(line.fields) if f.style is Style.ENUM and _readable(f)]
    result = []
    for combination in itertools.product((True, False), repeat=len(enums)):
        known = dict(zip(enums, combination))
        conditions = tuple(("" if k else "!") + f"$pg_k{n}" for n, k in known.items())
        records = _records(line, known, _limit(line))
        if len(records) > 1:
            shown = _one_record_layout(line, known)
            if shown:
                read = read_pieces(line)
                short = tuple(f"{_string_variables(n)[1]} < {count}" for n, count in shown.items()
                              if count < read[n])
                result.append(Variant(conditions + short, (_printf(_line_items(line, known, shown)),)))
        result.append(Variant(conditions, tuple(records)))
    return result


def statements(line: ProbeLine) -> list[str]:
    """What a probe computes before printing: struct pointers, string
    addresses and their full pieces, enum names."""
    rows = ["$t = nsecs;", *pointer_variables(line)]
    read = read_pieces(line)
    for number, field in enumerate(line.fields):
        if _reads_string(field):
            address, full = _string_variables(number)
            rows.append(f"{address} = (uint64){_value(field)};")
            if read[number] > 1:
                rows.extend(_full_pieces(address, full, read[number]))
        elif field.length is not None and _readable(field):
            rows.append(f"$pg_n{number} = {_buf_length(field)};")
        elif field.style is Style.ENUM and _readable(field):
            rows.extend(enum_lookup(field.enum, _value(field), f"$pg_e{number}", f"$pg_k{number}"))
    return rows


def split_probes(lines: list[ProbeLine]) -> list[str]:
    """Probes whose longest lines take more than one printf."""
    return [l.probe.name for l in lines if any(len(v.printfs) > 1 for v in variants(l))]


def pieces_body(line: ProbeLine) -> list[str]:
    """A probe's statements in the form for bpftrace before 0.21: strings
    read in pieces, a hit too long for one printf in several lines."""
    rows = statements(line)
    options = variants(line)
    if len(options) == 1:
        return rows + [f'printf("{p.format}", {", ".join(p.args)});' for p in options[0].printfs]
    for number, option in enumerate(options):
        last = number == len(options) - 1
        test = "" if last else f"if ({' && '.join(option.conditions)}) "
        rows.append(("" if number == 0 else "} else ") + test + "{")
        rows.extend(f'\tprintf("{p.format}", {", ".join(p.args)});' for p in option.printfs)
    return rows + ["}"]


def _variable(label: str, taken: set[str]) -> str:
    """A variable named for a field (``qpair->conn.state``:
    ``$qpair_conn_state``), unlike any other of the probe."""
    name = "$" + re.sub(r"\W", "_", label)
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def _names(field: Field, value: str, name: str) -> str:
    """One row setting ``name`` to the name of ``value`` (an enum field's),
    "" for a value unnamed. Assignments in an if chain: the strings of a
    ternary chain each take stack of their own in bpftrace 0.17, and three
    names of 32 to 60 characters passed its 512 bytes. Assigned first, as
    bpftrace 0.21 and later scope a variable to the block it is made in."""
    rows = [f'if ({value} == {number}) {{ {name} = "{name_literal(shown)}"; }}' for number, shown in field.enum.names]
    return f'{name} = ""; ' + " else ".join(rows)


def _string(field: Field) -> str:
    """str() of a string argument, bounded by its max_len: whole on bpftrace
    0.21 and later (up to BIG_STRLEN), the first DEFAULT_STRLEN - 1
    characters before (str() clamps to its default string size there)."""
    return f"str({_value(field)}, {min(field.max_len, BIG_STRLEN - 1) + 1})"


def whole_body(line: ProbeLine, small_stack: bool = True) -> list[str] | None:
    """A probe's statements printing each hit in one printf, strings with
    one str() each: enum names looked up once into a variable, one printf
    per combination of names known or not. None, when ``small_stack``
    (bpftrace 0.17 may run it), if 0.17 could not load it: its 512-byte
    stack, where strings take DEFAULT_STRLEN bytes whatever str() asks."""
    taken = {"$t"}
    rows = ["$t = nsecs;"]
    pointers = {}
    for field in line.fields:
        if field.is_member and _readable(field) and field.index not in pointers:
            pointers[field.index] = _variable(field.label.split("->")[0], taken)
            rows.append(f"{pointers[field.index]} = ({field.struct} *)arg{field.index};")
    enums = {}
    for number, field in enumerate(line.fields):
        if field.style is Style.ENUM and _readable(field):
            enums[number] = _variable(field.label, taken)
            rows.append(_names(field, _whole_value(field, pointers), enums[number]))
    stack = WORD_BYTES * (len(taken) + 2 + line.tid) + PIECE_BYTES * (len(enums) + 1)
    printfs = []
    for known in itertools.product((True, False), repeat=len(enums)):
        known = dict(zip(enums, known))
        text = "%llu.%06llu: " + printf_literal(line.probe.name) + " [tid %d]" * line.tid
        args = ["$t / 1000000000", "$t % 1000000000 / 1000"] + ["tid"] * line.tid
        size = stack
        for number, field in enumerate(line.fields):
            label = " " + printf_literal(field.label) + "="
            value = _whole_value(field, pointers)
            if not _readable(field):
                text += label + UNREADABLE
                continue
            if number in enums:
                text += label + ("%s" if known[number] else printf_literal(UNKNOWN_ENUM) + "(%d)")
                args.append(enums[number] if known[number] else value)
            elif _reads_string(field):
                text += label + "%s"
                args.append(_string(field))
            elif field.length is not None:
                text += label + "%r"
                args.append(_buf(field))
            else:
                item = _field_items(field, number, None, None)[0]
                text += item.format
                args.append(item.args[0].replace(_value(field), value))
            if field.style is Style.STRING and _is_char_array(field):  # copied whole
                size += _round(field.ctype.size)
            else:
                size += PIECE_BYTES if field.style in (Style.STRING, Style.ENUM) else WORD_BYTES
        if small_stack and size > BPF_STACK - STACK_MARGIN:
            return None
        test = " && ".join(f'{enums[n]} != ""' for n, k in known.items() if k)  # the ones before failed
        printfs.append((test, f'printf("{text}\\n", {", ".join(args)});'))
    if len(printfs) == 1:
        return rows + [printfs[0][1]]
    rows.append(f"if ({printfs[0][0]}) {{ {printfs[0][1]} }}")
    rows.extend(f"else if ({test}) {{ {call} }}" for test, call in printfs[1:-1])
    return rows + [f"else {{ {printfs[-1][1]} }}"]


def _whole_value(field: Field, pointers: dict[int, str]) -> str:
    value = _value(field)
    if field.is_member:
        value = value.replace(_pointer_variable(field), pointers[field.index])
    return value


def render_lines(catalog: Catalog, group: str, lines: list[ProbeLine], definitions: str = "",
                 big_strings: bool | None = None) -> str:
    """The script of these probe lines. ``big_strings``: True, for a
    bpftrace that holds big strings (0.21 and later); False, for an older
    one (strings in pieces, long hits in several lines); None, a script for
    either (strings whole where big strings are held)."""
    blocks = []
    for line in lines:
        body = None if big_strings is False else whole_body(line, small_stack=not big_strings)
        blocks.append({"line": line, "body": body or pieces_body(line), "pieces": body is None,
                       "unreadable": _unreadable(line), "cut": cut_strings(line) if body is None else []})
    return render(
        TEMPLATE,
        catalog=catalog,
        group=group,
        blocks=blocks,
        definitions=definitions,
        split=split_probes([b["line"] for b in blocks if b["pieces"]]),
        strings=any(_reads_string(f) for l in lines for f in l.fields),
        big_strlen=BIG_STRLEN - 1,
        long_strings=any(_reads_string(f) and f.max_len >= BIG_STRLEN for l in lines for f in l.fields),
        piece=PIECE,
        max_arg=MAX_ARG_INDEX,
        for_process=big_strings is not None,
    )


def render_script(catalog: Catalog, group: str, probes, types: TypeSource | None = None) -> str:
    lines = probe_lines(catalog, probes, types)
    structs = list(dict.fromkeys(s for l in lines for s in l.structs))
    definitions = types.definitions(structs) if types is not None and structs else ""
    return render_lines(catalog, group, lines, definitions)


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
