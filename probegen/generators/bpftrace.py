"""bpftrace scripts: one per group, ``all``, ``counts`` (and ``spans``: generators.spans);
render_lines makes them again for the process `probegen trace` traces. No BEGIN or END
block, so SPDK's ``scripts/bpftrace.sh`` can append its own. A probe's block is
whole_body (a hit in one printf) or, for bpftrace 0.17's 512-byte stack, pieces_body
(strings read PIECE characters at a time; a hit one printf cannot hold printed as several
lines, ``PROBE [tid TID K/N]``, which trace joins: runtime/trace.py).
"""

import itertools
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from probegen.catalog import Catalog
from probegen.catalog.ctype import align_up
from probegen.catalog.names import ALL_SCRIPT, COUNTS_SCRIPT
from probegen.generators.escape import printf_literal
from probegen.bpftrace import BIG_STRLEN, BPF_STACK, DEFAULT_MAX_LEN, DEFAULT_STRLEN, MAX_ARG_INDEX, UNREADABLE
from probegen.bpftrace import conversion
from probegen.generators.lines import UNKNOWN_ENUM, Field, ProbeLine, Style, enum_chain, enum_lookup, probe_line
from probegen.generators.lines import CONTINUED, struct_definitions
from probegen.files.output import GeneratedFile
from probegen.generators.render import render
from probegen.generators.spans import HITS_MAP, render_files as render_span_files

if TYPE_CHECKING:  # it loads drgn, which only --binary needs
    from probegen.dwarf.types import DwarfTypes

KIND, WRITES_DIRECTORY = "bpftrace", True
# Characters one str() reads at bpftrace 0.17's default BPFTRACE_STRLEN, and the bytes of stack it takes.
PIECE, PIECE_BYTES = DEFAULT_MAX_LEN, DEFAULT_STRLEN
# A printf takes its arguments' bytes of stack and one more copy of its largest string. Measured
# on bpftrace 0.17: $t, timestamp, four integers and six 64-byte strings (504 bytes counted so)
# load, seven (568) do not; a margin of 24, not 32, keeps SPDK's nvmf_subsystem_change_state_done one printf.
STACK_MARGIN = 24
LOOP_VARIABLES = 5  # of the loop counting a string's full pieces
WORD_BYTES = 8
# The verifier follows each string's NUL-finding loop once per way the loops
# before it ended: measured on bpftrace 0.17, 8 x 8 x 8 and 16 x 16 pieces
# load, 16 x 16 x 16 do not (one string of 66 does). Longer strings are cut.
VERIFIER_PIECES = 512
TIME = ("$t / 1000000000", "$t % 1000000000 / 1000")


class Item(NamedTuple):  # a run of a printf: format, arguments, their stack bytes, the extra copy a read takes
    format: str
    args: tuple[str, ...] = ()
    size: int = 0
    copy: int = 0


def _readable(field: Field) -> bool:
    return max(field.index, field.length or 0) <= MAX_ARG_INDEX


def _reads_string(field: Field) -> bool:
    """Read by str(): a char pointer (a char array member prints as it is; a string with a
    length is read by buf()). The catalog's strings are all char pointers."""
    return field.style is Style.STRING and field.length is None and field.ctype.pointer_sized and _readable(field)


def _value(field: Field, pointers: dict[int, str] | None = None) -> str:
    """``pointers``: the variable holding each struct pointer, by argument (default ``$pg_argN``)."""
    if not field.is_member:
        return f"arg{field.index}"
    value = f"{(pointers or {}).get(field.index, f'$pg_arg{field.index}')}->{field.member}"
    if field.style is Style.ENUM and field.enum.signed and field.size < 8:
        # bpftrace 0.17 reads an enum member as unsigned: -2 would be 4294967294.
        return f"(int{field.size * 8}){value}"
    return value


def _buf_length(field: Field) -> str:
    """A negative length (or one past 2**63) as 0, a longer one as max_len."""
    length, most = f"arg{field.length}", min(field.max_len, BIG_STRLEN - 1)
    return f"(int64){length} < 0 ? 0 : ({length} > {most} ? {most} : {length})"


def _pointers(line: ProbeLine, name) -> tuple[dict[int, str], list[str]]:
    """A variable for each struct pointer whose members the line prints (by argument) and the
    rows setting them. Read once: reading the argument in every access lets LLVM share a
    ctx + offset address bpftrace 0.17's verifier refuses."""
    pointers, rows = {}, []
    for field in line.fields:
        if field.is_member and _readable(field) and field.index not in pointers:
            pointers[field.index] = name(field)
            rows.append(f"{pointers[field.index]} = ({field.struct} *)arg{field.index};")
    return pointers, rows


def _head(line: ProbeLine, part: int = 0, parts: int = 0) -> Item:
    """The start of a hit's line, or of its line ``part`` of ``parts`` (one after the first
    continues the one before it after its ``+``)."""
    tid = f" [tid %d {part}/{parts}]" + CONTINUED * (part > 1) if parts else " [tid %d]" * line.tid
    args = TIME + ("tid",) * bool(tid)
    return Item("%llu.%06llu: " + printf_literal(line.probe.name) + tid, args, len(args) * WORD_BYTES)


def _call(item: Item) -> str:
    return f'printf("{item.format}\\n", {", ".join(item.args)});'


def _join(items: list[Item]) -> Item:
    return Item("".join(i.format for i in items), tuple(a for i in items for a in i.args))


# The whole form.

def _variable(label: str, taken: set[str]) -> str:
    """``qpair->conn.state``: ``$qpair_conn_state``, unlike any other of the probe."""
    name = "$" + re.sub(r"\W", "_", label)
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def whole_body(line: ProbeLine, small_stack: bool = True) -> list[str] | None:
    """A probe's statements printing each hit in one printf: enum names looked up once into a
    variable, one printf per combination of names known or not. None, when ``small_stack``
    (0.17 may run it), if 0.17's stack could not hold it (its strings take 64 bytes whatever
    str() asks)."""
    taken = {"$t"}
    pointers, rows = _pointers(line, lambda f: _variable(f.label.split("->")[0], taken))
    enums = {n: _variable(f.label, taken) for n, f in enumerate(line.fields) if f.style is Style.ENUM and _readable(f)}
    rows.insert(0, "$t = nsecs;")
    for n, name in enums.items():
        # "" first (bpftrace 0.21 scopes a variable to the block it is made in), then an if
        # chain (0.17 gives each string of a ternary chain stack of its own)
        chain = enum_chain(line.fields[n].enum, _value(line.fields[n], pointers), name)
        rows.append(f'{name} = ""; ' + " else ".join(chain))
    chain = []
    for known in itertools.product((True, False), repeat=len(enums)):
        known = dict(zip(enums, known))
        items = _line_items(line, known, pointers=pointers, enums=enums)
        # 0.17's stack: the printf's arguments, each variable, each enum name and one str() buffer
        stack = sum(i.size for i in items) + WORD_BYTES * len(taken) + PIECE_BYTES * (len(enums) + 1)
        if small_stack and stack > BPF_STACK - STACK_MARGIN:
            return None
        test = " && ".join(f'{enums[n]} != ""' for n, k in known.items() if k)  # the ones before failed
        call = _call(_join(items))  # the last, every name unknown, has no test; alone, no braces
        chain.append(f"if ({test}) {{ {call} }}" if test else f"{{ {call} }}" if enums else call)
    return rows + chain[:1] + ["else " + row for row in chain[1:]]


# The pieces form.

def read_pieces(line: ProbeLine) -> dict[int, int]:
    """Pieces read of each string field: all its max_len, unless their product passes
    VERIFIER_PIECES; then the longest strings are cut (one alone never is)."""
    counts = {n: math.ceil(f.max_len / PIECE) for n, f in enumerate(line.fields) if _reads_string(f)}
    while len(counts) > 1 and math.prod(counts.values()) > VERIFIER_PIECES:
        counts[max(counts, key=lambda n: (counts[n], -n))] -= 1  # the longest (the first of equals)
    return counts


def _full_pieces(address: str, full: str, count: int) -> list[str]:
    """Statements counting into ``full`` the leading pieces of the string at ``address`` that
    hold no NUL, up to ``count`` - 1: a piece past the string's end is not read. A piece and
    the byte after it are tested as words; a failed read gives zeros, which end the count. A
    loop, as 0.17 gives every unrolled read 8 bytes of stack. (w - 0x0101...) & ~w &
    0x8080... is non-zero exactly when a byte of the word w is 0."""
    words = align_up(PIECE, WORD_BYTES) // WORD_BYTES
    return [
        f"{full} = 0;",
        "$pg_more = 1;",
        "$pg_zero = (uint64)0;",
        "$pg_words = (uint64)0;",
        f"$pg_at = {address};",
        f"while ($pg_more && $pg_words < {words * (count - 1)}) {{",
        "	$pg_word = *(uint64 *)uptr($pg_at);",
        "	$pg_zero = $pg_zero | (($pg_word - 0x0101010101010101) & ~$pg_word);",
        f"	$pg_at = $pg_at + {WORD_BYTES};",
        "	$pg_words = $pg_words + 1;",
        f"	if ($pg_words % {words} == 0) {{",
        "		if ($pg_zero & 0x8080808080808080) { $pg_more = 0; } "
        f"else {{ {full} = {full} + 1; $pg_at = $pg_at - {align_up(PIECE, WORD_BYTES) - PIECE}; }}",
        "	}",
        "}",
    ]


def _field_items(field: Field, number: int, known: bool | None, shown: int | None = None,
                 pointers: dict[int, str] | None = None, enum: str | None = None) -> list[Item]:
    """Items of one ``name=value``. The pieces form reads ``shown`` pieces of a string; the
    whole form (``pointers`` given) reads it by one str(), a string with a length by one
    buf(), an enum's name from ``enum``."""
    label = " " + printf_literal(field.label) + "="
    value = _value(field, pointers)
    if not _readable(field):
        return [Item(label + UNREADABLE)]
    if field.style is Style.ENUM and known:
        return [Item(label + "%s", (enum or f"$pg_e{number}",), PIECE_BYTES)]
    if field.style is Style.ENUM:
        return [Item(label + printf_literal(UNKNOWN_ENUM) + "(%d)", (value,), WORD_BYTES)]
    if _reads_string(field) and pointers is not None:  # all of it on 0.21 and later, 63 characters before
        return [Item(label + "%s", (f"str({value}, {min(field.max_len, BIG_STRLEN - 1) + 1})",), PIECE_BYTES)]
    if field.length is not None and pointers is not None:  # exactly that many bytes, unprintable ones as \xNN
        return [Item(label + "%r", (f"buf({value}, {_buf_length(field)})",), PIECE_BYTES)]
    if _reads_string(field):  # piece k is read only if the k before it are full ($pg_fN)
        items = [Item(label)]
        for k in range(shown):
            where = f"$pg_f{number} >= {k} ? $pg_s{number} + {k * PIECE} : 0" if k else f"$pg_s{number}"
            read = f"str(uptr({where}), {min(PIECE, field.max_len - k * PIECE)})"
            items.append(Item("%s", (read,), PIECE_BYTES, PIECE_BYTES))
        return items
    if field.length is not None:  # buf()s of PIECE_BYTES at most, the length in $pg_nN
        items, size, n = [Item(label)], PIECE_BYTES + WORD_BYTES, f"$pg_n{number}"
        for start in range(0, min(field.max_len, BIG_STRLEN - 1), PIECE_BYTES):
            at = f"{value} + {start}" if start else value
            rest = f"({n} > {start} ? {n} - {start} : 0)" if start else n
            items.append(Item("%r", (f"buf({at}, {n} > {start + PIECE_BYTES} ? {PIECE_BYTES} : {rest})",), size, size))
        return items
    if field.style is Style.STRING:  # a char array member: bpftrace reads and prints it whole
        size = align_up(field.ctype.size, WORD_BYTES)
        return [Item(label + "%s", (value,), size, size)]
    if field.style is Style.HEX:  # its own bits at its width, not sign-extended
        value = f"(uint{field.size * 8}){value}"
    return [Item(label + conversion(field.style.value, field.size), (value,), WORD_BYTES)]


def _line_items(line: ProbeLine, known: dict, shown: dict | None = None, pointers=None, enums=None) -> list[Item]:
    """``shown`` (or all read_pieces) pieces of each string; ``pointers`` and ``enums``: the
    whole form's variables."""
    shown = {**read_pieces(line), **(shown or {})}
    items = [_head(line)]
    for number, field in enumerate(line.fields):
        items += _field_items(field, number, known.get(number), shown.get(number), pointers, (enums or {}).get(number))
    return items


def _stack(items: list[Item]) -> int:
    return sum(i.size for i in items) + max((i.copy for i in items), default=0)


def _limit(line: ProbeLine) -> int:
    """Stack bytes left for one printf: BPF_STACK less the probe's variables (0.17 keeps each
    on the stack: 8 bytes, an enum name 64) and STACK_MARGIN."""
    strings = read_pieces(line)  # $pg_sN and $pg_fN each, and the loop's if one has pieces to count
    enums = sum(1 for f in line.fields if f.style is Style.ENUM and _readable(f))
    bufs = sum(1 for f in line.fields if f.length is not None and _readable(f))
    pointers = len({f.index for f in line.fields if f.is_member and _readable(f)})
    scalars = 1 + pointers + 2 * len(strings) + enums + bufs + LOOP_VARIABLES * any(c > 1 for c in strings.values())
    return BPF_STACK - STACK_MARGIN - WORD_BYTES * scalars - PIECE_BYTES * enums


def _records(line: ProbeLine, known: dict, limit: int) -> list[Item]:
    """The hit as one printf if it fits ``limit``, else as several: whole fields while they
    fit, a field too long for a line split between its pieces."""
    items = _line_items(line, known)
    if _stack(items) <= limit:
        return [_join(items)]
    read = read_pieces(line)
    room = _head(line, 2, 2)  # every line's tag takes the same stack
    groups: list[list[Item]] = [[]]
    for n, f in enumerate(line.fields):
        field = _field_items(f, n, known.get(n), read.get(n))
        for k, item in enumerate(field):  # a field starts a line unless it fits whole, an item unless it fits
            if groups[-1] and _stack([room, *groups[-1], *((item,) if k else field)]) > limit:
                groups.append([])
            groups[-1].append(item)
    return [_join([_head(line, n, len(groups)), *group]) for n, group in enumerate(groups, 1)]


def _one_record_layout(line: ProbeLine, known: dict) -> dict[int, int] | None:
    """Pieces per string field for a hit in one printf when its strings are short enough: as
    many as fit, shared out in turn; {} without strings, None if one gets no piece. A piece
    that does not fit never will (the line only grows): rounds as many as the most pieces."""
    read, limit = read_pieces(line), _limit(line)
    shown = dict.fromkeys(read, 0)
    for _, n in itertools.product(range(max(read.values(), default=0)), read):
        if shown[n] < read[n] and _stack(_line_items(line, known, {**shown, n: shown[n] + 1})) <= limit:
            shown[n] += 1
    return shown if all(shown.values()) else None


def statements(line: ProbeLine) -> list[str]:
    """What a probe computes before printing: struct pointers, string addresses and their
    full pieces, lengths, enum names."""
    rows = ["$t = nsecs;", *_pointers(line, lambda f: f"$pg_arg{f.index}")[1]]
    read = read_pieces(line)
    for number, field in enumerate(line.fields):
        if _reads_string(field):
            rows.append(f"$pg_s{number} = (uint64){_value(field)};")
            if read[number] > 1:
                rows.extend(_full_pieces(f"$pg_s{number}", f"$pg_f{number}", read[number]))
        elif field.length is not None and _readable(field):
            rows.append(f"$pg_n{number} = {_buf_length(field)};")
        elif field.style is Style.ENUM and _readable(field):
            rows.extend(enum_lookup(field.enum, _value(field), f"$pg_e{number}", f"$pg_k{number}"))
    return rows


def pieces_body(line: ProbeLine) -> tuple[list[str], bool]:
    """A probe's statements for bpftrace before 0.21, and whether a hit may take more than one
    printf. A branch for each combination of enum values known or not (0.17 cannot make a
    string of a number) and, where a hit needs more than one printf, first one for hits
    whose strings are short enough for one."""
    enums = [n for n, f in enumerate(line.fields) if f.style is Style.ENUM and _readable(f)]
    options = []  # (conditions, printfs)
    for combination in itertools.product((True, False), repeat=len(enums)):
        known = dict(zip(enums, combination))
        conditions = tuple(("" if k else "!") + f"$pg_k{n}" for n, k in known.items())
        records = _records(line, known, _limit(line))
        shown = _one_record_layout(line, known) if len(records) > 1 else None
        if shown:
            read = read_pieces(line)
            short = tuple(f"$pg_f{n} < {count}" for n, count in shown.items() if count < read[n])
            options.append((conditions + short, [_join(_line_items(line, known, shown))]))
        options.append((conditions, records))
    rows = statements(line)
    split = any(len(printfs) > 1 for _, printfs in options)
    if len(options) == 1:
        return rows + [_call(p) for p in options[0][1]], split
    for number, (conditions, printfs) in enumerate(options):
        test = "" if number == len(options) - 1 else f"if ({' && '.join(conditions)}) "
        rows.append(("" if number == 0 else "} else ") + test + "{")
        rows.extend("\t" + _call(p) for p in printfs)
    return rows + ["}"], split


def render_lines(catalog: Catalog, group: str, lines: list[ProbeLine], definitions: str = "",
                 big_strings: bool | None = None) -> str:
    """``big_strings``: True for a bpftrace that holds big strings (0.21 and later), False for
    an older one (the pieces form), None for either."""
    blocks = []
    for line in lines:
        whole = None if big_strings is False else whole_body(line, small_stack=not big_strings)
        body, split = (whole, False) if whole is not None else pieces_body(line)
        cut = [] if whole else [f"{line.fields[n].label} at {count * PIECE}" for n, count in read_pieces(line).items()
                                if count * PIECE < line.fields[n].max_len]
        blocks.append({"line": line, "body": body, "split": split, "cut": cut,
                       "unreadable": [f.label for f in line.fields if not _readable(f)]})
    strings = [f for l in lines for f in l.fields if _reads_string(f)]
    return render("bpftrace.bt.j2", catalog=catalog, group=group, blocks=blocks, definitions=definitions,
                  split=[b["line"].probe.name for b in blocks if b["split"]], strings=bool(strings),
                  long_strings=any(f.max_len >= BIG_STRLEN for f in strings), big_strlen=BIG_STRLEN - 1,
                  piece=PIECE, max_arg=MAX_ARG_INDEX, for_process=big_strings is not None)


def render_script(catalog: Catalog, group: str, probes, types: "DwarfTypes | None" = None) -> str:
    lines = [probe_line(catalog, p, types) for p in probes]
    return render_lines(catalog, group, lines, struct_definitions(lines, types))


def render_files(catalog: Catalog, output: Path, types: "DwarfTypes | None" = None) -> list[GeneratedFile]:
    # catalog.load refuses groups named like the other scripts
    files = [GeneratedFile(output / f"{stem}.bt", render_script(catalog, stem, probes, types), executable=True)
             for stem, probes in [*catalog.groups.items(), (ALL_SCRIPT, catalog.probes)]]
    counts = render("bpftrace_count.bt.j2", catalog=catalog, hits=HITS_MAP)
    return files + [GeneratedFile(output / f"{COUNTS_SCRIPT}.bt", counts, executable=True),
                    *render_span_files(catalog, output)]
