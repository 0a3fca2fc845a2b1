"""The bpftrace span script (how long each catalog span takes, as log2 histograms in
microseconds) and `probegen trace`'s summary programs (--hist, --count, --interval),
which also have a banner in BEGIN and clear the spans still open in END.

A start probe stores ``nsecs`` under the span's key (its key arguments, or the thread);
the end probe looks it up, deletes it and adds the time to ``@SPAN_us[BY...]``, or counts
``@SPAN_unmatched``. A ``by`` value only the start probe has is kept in ``@SPAN_byN``
until the end. Each probe has one block however many spans use it.
"""

from dataclasses import dataclass, field
from pathlib import Path

from probegen.catalog import Arg, Catalog, Probe, Span
from probegen.catalog.ctype import Kind
from probegen.catalog.names import SPAN_SCRIPT
from probegen.files.output import GeneratedFile
from probegen.bpftrace import DEFAULT_STRLEN, STRLEN_LIMIT
from probegen.generators.lines import UNKNOWN_ENUM, arg_fields, enum_lookup
from probegen.generators.render import render

HITS_MAP = "@hits"
# bpftrace 0.17 keeps every str() of a probe block on the 512-byte BPF stack beside the map
# keys made of them: 256 bytes of strings a block always loads.
STRING_STACK_BUDGET = 256


def hist_map(span: Span) -> str:
    return f"@{span.name}_us"


def unmatched_map(span: Span) -> str:
    return f"@{span.name}_unmatched"


@dataclass
class _Block:  # what one probe does for every span using it
    probe: Probe
    count: bool = False  # --count: @hits[PROBE] = count()
    ends: list[str] = field(default_factory=list)
    starts: list[str] = field(default_factory=list)
    strings: int = 0  # str() reads in the block

    @property
    def body(self) -> list[str]:
        rows = ["$now = nsecs;"] if self.ends or self.starts else []
        if self.count:
            rows.append(f'{HITS_MAP}["{self.probe.name}"] = count();')
        return rows + self.ends + self.starts  # spans ended, then spans started


def _wanted(*args: Arg) -> int:
    """LEN of str(arg, LEN): the longest max_len plus one (bpftrace's 64 without one)."""
    return max((a.max_len + 1 for a in args if a.max_len), default=DEFAULT_STRLEN)


def _read(arg: Arg, strlen: int, *others: Arg) -> str:
    """Every side of a key reads the same LEN, so the map's key type is one."""
    if arg.ctype.kind is Kind.STRING:
        return f"str(arg{arg.index}, {min(_wanted(arg, *others), strlen)})"
    return f"arg{arg.index}"


def _span_parts(catalog: Catalog, span: Span, blocks: dict[str, _Block], strlen: int) -> None:
    var, start_map = f"${span.name}", f"@{span.name}_start"
    start_block, end_block = blocks[span.start.name], blocks[span.end.name]
    start_keys, end_keys, end_setup = (["tid"], ["tid"], []) if span.by_thread else ([], [], [])
    # Strings last: 0.17's verifier refuses a (string, integer) key ("misaligned stack access")
    for i, key in enumerate(sorted(span.key, key=lambda k: k.start.ctype.kind is Kind.STRING)):
        start_keys.append(_read(key.start, strlen, key.end))
        end_setup.append(f"{var}_k{i} = {_read(key.end, strlen, key.start)};")
        end_keys.append(f"{var}_k{i}")
        start_block.strings += key.start.ctype.kind is Kind.STRING
        end_block.strings += key.start.ctype.kind is Kind.STRING
    start_key, end_key = ", ".join(start_keys), ", ".join(end_keys)
    stored, parts, by_reads, by_setup = [], [], [], []
    for i, by in enumerate(span.by):
        value = _read(by.arg, strlen)
        if by.at_start:
            stored.append((f"@{span.name}_by{i}", value))
            value = f"@{span.name}_by{i}[{end_key}]"
        (start_block if by.at_start else end_block).strings += by.arg.ctype.kind is Kind.STRING
        # An enum's name (UNKNOWN for a value without one: 0.17 cannot make a string of a number)
        # into a variable, then one hist(): a hist() per branch fails 0.17's verifier beside a
        # string span key.
        table = arg_fields(catalog, by.arg, None)[0].enum
        if table is not None or by.at_start:  # a value stored at the start is read before it is deleted
            by_reads.append(f"{var}_b{i} = {value};")
            value = f"{var}_b{i}"
        if table is not None:
            by_setup += enum_lookup(table, value, f"{var}_n{i}", f"{var}_known{i}", unnamed=UNKNOWN_ENUM)
            value = f"{var}_n{i}"
        parts.append(value)
    by_keys = f"[{', '.join(parts)}]" if parts else ""
    start_block.starts += [f"// starts {span.name}", f"{start_map}[{start_key}] = $now;",
                           *(f"{name}[{start_key}] = {value};" for name, value in stored)]
    end_block.ends += [
        f"// ends {span.name}",
        *end_setup,
        f"{var}_start = {start_map}[{end_key}];",
        f"if ({var}_start) {{",
        f"\t{var}_us = ($now - {var}_start) / 1000;",
        *("\t" + row for row in by_reads),
        # Deleted before anything else uses the stack: after an enum name's lookup or a hist(),
        # bpftrace 0.17 deletes a string key's entry no more (it reuses the key's stack), and the
        # span would print as still open at exit.
        *(f"\tdelete({name}[{end_key}]);" for name in [start_map, *(name for name, _ in stored)]),
        *("\t" + row for row in by_setup),
        f"\t{hist_map(span)}{by_keys} = hist({var}_us);",
        "} else {",
        f"\t{unmatched_map(span)} = count();",
        "}",
    ]


def _plan(catalog: Catalog, spans, counted, strlen: int) -> list[_Block]:
    """In catalog order, each probe once."""
    used = {p.name for s in spans for p in (s.start, s.end)} | {p.name for p in counted}
    blocks = {p.name: _Block(p, count=p in counted) for p in catalog.probes if p.name in used}
    for span in spans:
        _span_parts(catalog, span, blocks, strlen)
    return list(blocks.values())


def render_program(catalog: Catalog, spans=None, counted=(), interval: int | None = None, whole: bool = True) -> str:
    """A program measuring ``spans`` (default: all the catalog's) and counting hits of the
    ``counted`` probes; ``interval``: print and reset every so many seconds. ``whole``: with
    its own BEGIN and END; without, for runners that add their own (SPDK's bpftrace.sh)."""
    spans = catalog.spans if spans is None else tuple(spans)
    wanted = max([_wanted(a) for s in spans for k in s.key for a in (k.start, k.end)]
                 + [_wanted(b.arg) for s in spans for b in s.by], default=DEFAULT_STRLEN)
    most = max((b.strings for b in _plan(catalog, spans, counted, STRLEN_LIMIT)), default=0)
    strlen = max(DEFAULT_STRLEN, min(wanted, STRING_STACK_BUDGET // most if most else STRLEN_LIMIT, STRLEN_LIMIT))
    what = [f"{len(spans)} span{'s' if len(spans) != 1 else ''}"] if spans or not counted else []
    what += [f"hits of {len(counted)} probe{'s' if len(counted) != 1 else ''}"] if counted else []
    blocks = [("BEGIN", [f'printf("Tracing {" and ".join(what)}. Hit Ctrl-C to print.\\n");'])] if whole else []
    blocks += [(f"usdt:*:{catalog.provider}:{b.probe.name}", b.body) for b in _plan(catalog, spans, counted, strlen)]
    if interval:
        rows = ['time("%H:%M:%S\\n");']
        for maps in [(hist_map(s), unmatched_map(s)) for s in spans] + ([(HITS_MAP,)] if counted else []):
            rows += [f"print({name});" for name in maps] + [f"clear({name});" for name in maps]
        blocks.append((f"interval:s:{interval}", rows))
    open_maps = [f"@{s.name}_start" for s in spans] + [f"@{s.name}_by{i}" for s in spans
                                                      for i, b in enumerate(s.by) if b.at_start]
    if whole:
        blocks.append(("END", [f"clear({name});" for name in open_maps]))
    return render("bpftrace_spans.bt.j2", catalog=catalog, spans=spans, blocks=blocks, whole=whole,
                  counted=bool(counted), interval=interval, strlen=strlen, default_strlen=DEFAULT_STRLEN,
                  cut=wanted > strlen, stored_by=len(open_maps) > len(spans))


def render_files(catalog: Catalog, output: Path) -> list[GeneratedFile]:
    if not catalog.spans:
        return []
    return [GeneratedFile(output / f"{SPAN_SCRIPT}.bt", render_program(catalog, whole=False), executable=True)]
