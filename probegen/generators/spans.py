"""The bpftrace span script: how long each catalog span takes, as log2
histograms in microseconds.

A start probe stores ``nsecs`` under the span's key (its key arguments,
or the thread id); the end probe looks the start up, deletes it and adds
``(now - start) / 1000`` to ``@SPAN_us``, one histogram per value of the
span's ``by`` arguments, or counts ``@SPAN_unmatched`` when no start was
stored. A ``by`` argument only the start probe has is kept in
``@SPAN_byN`` beside the start time. Probes shared by spans get one block
each, so each probe costs one uprobe however many spans use it.

String keys and by values are read with ``str(argN, LEN)``: keys compare
their first LEN - 1 bytes (LEN: the longer max_len of the two arguments
plus one, else bpftrace's default 64, within what the stack allows). An
enum ``by`` value is named by rows of comparisons where the histogram is
keyed (lines.enum_lookup). ``spans.bt`` has no BEGIN or END block, so
SPDK's bpftrace.sh can add its own; spans still open at exit print then.
The same file renders `probegen trace`'s summary programs (--hist,
--count, with --interval), which have both: a banner, and clearing the
open spans.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from probegen.catalog import Arg, Catalog, Probe, Span
from probegen.catalog.ctype import Kind
from probegen.files.output import GeneratedFile
from probegen.bpftrace import DEFAULT_STRLEN, STRLEN_LIMIT
from probegen.generators.lines import UNKNOWN_ENUM, enum_lookup, enum_table
from probegen.generators.render import render

TEMPLATE = "bpftrace_spans.bt.j2"
SPAN_SCRIPT = "spans"
STRLEN_MARKER = "BPFTRACE_STRLEN="
# bpftrace 0.17 keeps every str() of a probe block on the 512-byte BPF
# stack beside the map keys built from them; the line scripts measured
# 256 bytes of strings per block as what always loads (generators.bpftrace).
STRING_STACK_BUDGET = 256


def hist_map(span: Span) -> str:
    return f"@{span.name}_us"


def unmatched_map(span: Span) -> str:
    return f"@{span.name}_unmatched"


def start_map(span: Span) -> str:
    return f"@{span.name}_start"


def by_start_map(span: Span, index: int) -> str:
    return f"@{span.name}_by{index}"


HITS_MAP = "@hits"


@dataclass
class _Block:
    """What one probe does for every span using it."""

    probe: Probe
    count: bool = False  # --count: @hits[PROBE] = count()
    ends: list[dict] = field(default_factory=list)
    starts: list[dict] = field(default_factory=list)
    strings: int = 0  # str() reads in the block


class _Builder:
    def __init__(self, catalog: Catalog, strlen_cap: int):
        self.catalog = catalog
        self.strlen_cap = strlen_cap
        self.wanted_strlen = DEFAULT_STRLEN

    def read(self, probe: Probe, arg: Arg, length: int) -> str:
        """bpftrace expression of an argument as a key or by value."""
        if arg.ctype.kind is Kind.STRING:
            return f"str(arg{arg.index}, {length})"
        return f"arg{arg.index}"

    def string_length(self, *args: Arg) -> int:
        """LEN of str(arg, LEN) for a key or by value: every side of a key
        must read the same LEN, so the map's key type is one."""
        wanted = max((a.max_len + 1 for a in args if a.max_len), default=DEFAULT_STRLEN)
        self.wanted_strlen = max(self.wanted_strlen, wanted)
        return min(wanted, self.strlen_cap)

    def enum_name(self, arg: Arg, value: str, name: str, known: str) -> list[str] | None:
        """Statements setting ``name`` to the enum name of ``value`` (UNKNOWN
        for a value without one), or None to key by its number: bpftrace
        0.17 cannot make a string of a number."""
        if arg.ctype.kind is not Kind.ENUM or arg.hex:
            return None
        table = enum_table(self.catalog, arg.ctype.enum_name, None)
        if table is None:
            return None
        return enum_lookup(table, value, name, known, unnamed=UNKNOWN_ENUM)


def _span_parts(builder: _Builder, span: Span, blocks: dict[str, _Block]) -> None:
    var = f"${span.name}"
    start_keys, end_keys, end_setup = [], [], []
    start_block, end_block = blocks[span.start.name], blocks[span.end.name]
    if span.by_thread:
        start_keys, end_keys = ["tid"], ["tid"]
    # Strings last: bpftrace 0.17 builds a (string, integer) key that the
    # verifier refuses ("misaligned stack access"); (integer, string) loads.
    for i, key in enumerate(sorted(span.key, key=lambda k: k.start.ctype.kind is Kind.STRING)):
        length = builder.string_length(key.start, key.end)
        start_keys.append(builder.read(span.start, key.start, length))
        end_setup.append(f"{var}_k{i} = {builder.read(span.end, key.end, length)};")
        end_keys.append(f"{var}_k{i}")
        if key.start.ctype.kind is Kind.STRING:
            start_block.strings += 1
            end_block.strings += 1
    stored, parts, by_reads, by_setup = [], [], [], []
    for i, by in enumerate(span.by):
        probe = span.by_probe(by)
        length = builder.string_length(by.arg)
        value = builder.read(probe, by.arg, length)
        if by.at_start:
            stored.append({"map": by_start_map(span, i), "value": value})
            value = f"{by_start_map(span, i)}[{', '.join(end_keys)}]"
            start_block.strings += by.arg.ctype.kind is Kind.STRING
        else:
            end_block.strings += by.arg.ctype.kind is Kind.STRING
        # The name into a variable, then one hist(): a hist() per branch
        # with string keys fails bpftrace 0.17's verifier ("misaligned
        # stack access") beside a string span key.
        naming = builder.enum_name(by.arg, f"{var}_b{i}", f"{var}_n{i}", f"{var}_known{i}")
        if naming is not None or by.at_start:  # a value stored at the start is read before it is deleted
            by_reads.append(f"{var}_b{i} = {value};")
            by_setup += naming or []
            parts.append(f"{var}_n{i}" if naming is not None else f"{var}_b{i}")
        else:
            parts.append(value)
    start_block.starts.append({"span": span, "map": start_map(span), "key": ", ".join(start_keys),
                               "stored": stored})
    end_block.ends.append({
        "span": span, "var": var, "setup": end_setup, "key": ", ".join(end_keys), "map": start_map(span),
        "by_reads": by_reads, "by_setup": by_setup, "by_keys": ", ".join(parts), "hist": hist_map(span),
        "unmatched": unmatched_map(span), "stored": [s["map"] for s in stored],
    })


def render_program(catalog: Catalog, spans=None, counted=(), interval: int | None = None,
                   title: str | None = None, whole: bool = True) -> str:
    """A bpftrace program measuring ``spans`` (default: all the catalog's)
    and counting hits of the ``counted`` probes; ``interval``: print and
    reset every so many seconds. ``whole``: with its own BEGIN (a banner)
    and END (clearing the spans still open, so they do not print at exit);
    without, for runners that add their own (SPDK's bpftrace.sh)."""
    spans = catalog.spans if spans is None else tuple(spans)
    builder, blocks = _plan(catalog, spans, counted, STRLEN_LIMIT)
    most = max((b.strings for b in blocks.values()), default=0)
    limit = min(STRLEN_LIMIT, STRING_STACK_BUDGET // most) if most else STRLEN_LIMIT
    strlen = max(DEFAULT_STRLEN, min(builder.wanted_strlen, limit))
    if strlen < builder.wanted_strlen:  # some max_len does not fit: read those strings cut
        builder, blocks = _plan(catalog, spans, counted, strlen)
    return render(
        TEMPLATE,
        catalog=catalog, title=title or f"{len(spans)} span{'s' if len(spans) != 1 else ''}",
        spans=spans, blocks=list(blocks.values()), whole=whole,
        counted=bool(counted), interval=interval,
        strlen=strlen, default_strlen=DEFAULT_STRLEN, strlen_marker=STRLEN_MARKER,
        cut=builder.wanted_strlen > strlen,
        hist_map=hist_map, unmatched_map=unmatched_map, start_map=start_map, hits_map=HITS_MAP,
        by_start_maps=[by_start_map(s, i) for s in spans for i, b in enumerate(s.by) if b.at_start],
    )


def _plan(catalog: Catalog, spans, counted, strlen_cap: int) -> tuple[_Builder, dict[str, _Block]]:
    """The blocks, in catalog order, each probe once."""
    builder = _Builder(catalog, strlen_cap)
    used = {p.name for s in spans for p in (s.start, s.end)} | {p.name for p in counted}
    blocks = {p.name: _Block(p, count=p in counted) for p in catalog.probes if p.name in used}
    for span in spans:
        _span_parts(builder, span, blocks)
    return builder, blocks


def render_files(catalog: Catalog, output: Path) -> list[GeneratedFile]:
    """``spans.bt`` in ``output`` when the catalog declares spans."""
    if not catalog.spans:
        return []
    return [GeneratedFile(Path(output) / f"{SPAN_SCRIPT}.bt", render_program(catalog, whole=False),
                          executable=True)]
