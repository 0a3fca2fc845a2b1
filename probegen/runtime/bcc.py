"""The part of every generated BCC tool no catalog changes: a tool is its
catalog's tables, then this source, then ``main(Tool(...))``. It runs under
the system's python3 (3.9 on), where BCC lives and probegen may not be, so it
imports only the standard library (``bcc`` inside ``main``)."""

import argparse
import atexit
import contextlib
import ctypes as ct
import functools
import heapq
import json
import os
import re
import resource
import select
import signal
import stat
import string
import sys
import time
import zlib

UNITS = {False: ("usecs", "us", 1000), True: ("msecs", "ms", 1000000)}  # by -m: text, JSON, ns per unit
STARS = 40  # width of a histogram's distribution column
POLL_MS = 100  # how long a turn of the main loop waits for events
# A hit waits this long before it prints, for other CPUs' earlier hits.
REORDER_NS = 250 * 1000 * 1000
REORDER_MAX = 100000  # hits held at most; past that the oldest prints at once
MAX_IN_FLIGHT = 10240  # span starts kept at once per span (its BPF hash)
MAX_HIST_KEYS = 4096  # histogram slots per span, all by values together


# --- values --------------------------------------------------------------

def text(raw):
    return raw.decode("utf-8", "surrogateescape")


def printable(value):
    """The traced process's text for a terminal: control characters and backslashes escaped."""
    return "".join(c if c.isprintable() and c != "\\" else c.encode("unicode_escape", "backslashreplace").decode()
                   for c in value)


class Field:
    """A printed value: label, note argument (0-based), format (see PROBES), member: (struct, member path)."""

    def __init__(self, label, arg, fmt, member=None):
        self.label, self.arg, self.member = label, arg, member
        kind, bits, length, more = re.match(r"([a-z]+?)(\d*)(?::(\d+)(?=:))?(?::(.*))?$", fmt).groups()
        self.length = int(length) if length else None  # buf: the argument holding the length (0-based)
        self.max_len = int(more) if kind in ("str", "chars", "flex", "buf") else 0
        self.enum = more if kind in ("s", "u") else None
        self.kind = "enum" if self.enum else {"s": "int", "u": "int", "x": "hex"}.get(kind, kind)
        self.signed = kind == "s"  # the catalog's sign
        self.bits = self.catalog_bits = int(bits or 64)
        self.missing, self.is_string = False, self.max_len > 0

    def c_decl(self, name):
        if self.kind == "buf":
            return "struct { u32 n; u8 b[%d]; } %s;" % (self.max_len, name)
        return "char %s[%d];" % (name, self.max_len + 1) if self.is_string else "u64 %s;" % name

    def c_type(self):
        if self.kind == "buf":
            return type("Buf", (ct.Structure,), {"_fields_": [("n", ct.c_uint32), ("b", ct.c_ubyte * self.max_len)]})
        return ct.c_char * (self.max_len + 1) if self.is_string else ct.c_uint64

    def catalog_type(self):
        """The argument's C type in the catalog (the pointer, for a string or a member)."""
        if self.is_string or self.kind == "ptr" or self.member:
            return "uint64_t"
        return "%sint%d_t" % ("" if self.signed else "u", self.catalog_bits)

    def bind(self, note_type):
        """Read at the note's C type (None: no such argument), with the
        catalog's sign where the widths agree, else the note's."""
        self.missing = note_type is None
        if note_type is not None and not self.is_string and self.kind != "ptr" and not self.member:
            self.bits = int(re.sub(r"\D", "", note_type))
            if self.bits != self.catalog_bits:
                self.signed = not note_type.startswith("u")

    def c_read(self, dst, note_type, length_type=None):
        """C reading the value into ``dst``; ``length_type``: a buf's length's note type."""
        if note_type is None:
            return ""
        d, at, pre = dst, "(void *)(unsigned long)v", ""
        if self.member:
            at = "&((%s *)(unsigned long)v)->%s" % self.member
            if self.kind == "str":  # a char pointer member: the pointer, then the string
                pre, at = "u64 s = 0; bpf_probe_read_user(&s, sizeof(s), %s); " % at, "(void *)s"
        if self.kind == "buf":  # exactly min(length, max_len) bytes; a negative length (or past 2**63) none
            n = "bpf_usdt_readarg(%d, ctx, &n);" % (self.length + 1) if length_type else ""
            body = (f"{length_type or 'u64'} n = 0; {n} s64 m = (s64)n; if (m < 0) m = 0; if (m > {self.max_len}) "
                    f"m = {self.max_len}; {d}.n = 0; if (m > 0 && bpf_probe_read_user({d}.b, m, {at}) == 0) {d}.n = m;")
        elif self.kind == "chars":  # a char array member: its bytes (it may have no NUL), then a NUL
            body = f"if (bpf_probe_read_user({d}, {self.max_len}, {at}) < 0) {d}[0] = 0; {d}[{self.max_len}] = 0;"
        elif self.is_string:
            body = f"if (bpf_probe_read_user_str({d}, sizeof({d}), {at}) < 0) {d}[0] = 0;"
        elif self.member:
            body = "__typeof__(((%s *)0)->%s) m = 0; bpf_probe_read_user(&m, sizeof(m), %s); %s = m;" % (
                self.member + (at, d))
        else:  # a pointer; an integer sign-extended or not from the note's width, as printed
            body = f"{d} = v;" if self.kind == "ptr" else f"{d} = ({'s' if self.signed else 'u'}{self.bits})v;"
        return "{ %s v = 0; bpf_usdt_readarg(%d, ctx, &v); %s%s }" % (note_type, self.arg + 1, pre, body)

    def value(self, raw, enums):
        """(text, JSON value) of the raw event member."""
        if self.missing:
            return "?", None
        if self.kind == "buf":  # as bpftrace's %r prints it: a byte not printable as \\xNN
            shown = "".join(chr(b) if 32 <= b < 127 else "\\x%02x" % b for b in bytes(raw.b)[:raw.n])
            return shown, shown
        if self.is_string:
            return text(raw), text(raw)
        if self.kind == "ptr":
            return ("0x%x" % raw if raw else "(nil)",) * 2
        if self.kind == "hex":
            return ("0x%x" % (raw & ((1 << self.bits) - 1)),) * 2
        number = raw - (1 << 64) if self.signed and raw >> 63 else raw
        if self.kind == "enum":
            name = enums[self.enum]["names"].get(number) or "UNKNOWN(%d)" % number
            return name, name
        return str(number), number


class Probe:
    def __init__(self, number, name, group, doc, nargs, fields):
        self.number, self.name, self.group, self.doc, self.nargs = number, name, group, doc, nargs
        self.fields = [Field(*f) for f in fields]

    @functools.cached_property
    def event(self):
        """Its hit's ctypes struct, the C struct program_text gives it."""
        fields = [("f%d" % i, f.c_type()) for i, f in enumerate(self.fields)]
        return type("Hit%d" % self.number, (HitHeader,), {"_fields_": fields})


class Span:
    def __init__(self, number, name, doc, start, end, keys, by):
        self.number, self.name, self.doc, self.start, self.end = number, name, doc, start, end
        self.keys = [(Field(label, a, fmt), Field(label, b, fmt)) for label, fmt, a, b in keys]
        self.by = [(Field(label, a, fmt), at == "start") for label, fmt, a, at in by]


class Tool:
    """A catalog's tables, as the generated part of a tool gives them."""

    def __init__(self, provider, description, enums, probes, spans, structs=""):
        self.provider, self.description, self.structs = provider, description, structs
        # name -> {"names": value -> printed name (the catalog's, or the traced file's), "strip": prefix}
        self.enums = {name: {"names": names, "strip": strip} for name, (strip, names) in enums.items()}
        self.probes = [Probe(n, *p) for n, p in enumerate(probes)]
        self.spans = [Span(n, *s) for n, s in enumerate(spans)]
        self.by_name = {p.name: p for p in self.probes}


# --- options -------------------------------------------------------------

def parse_args(tool, argv=None):
    """The options, checked: a wrong one is a line on stderr and exit 2."""
    parser = argparse.ArgumentParser(description=tool.description)
    add = parser.add_argument
    add("-p", "--pid", type=int, help="trace this process (needed for probes with semaphores)")
    add("binary", nargs="?", help="the executable or library holding the probes "
        "(alone: every process running it, for probes without semaphores)")
    add("--probe", action="append", default=[], metavar="NAME", help="trace this probe (repeatable)")
    add("--group", action="append", default=[], metavar="NAME", help="trace this group's probes (repeatable)")
    add("--span", action="append", default=[], metavar="NAME", help="with --hist: this span (repeatable)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--count", action="store_true", help="count hits per probe; print the counts at the end")
    mode.add_argument("--hist", action="store_true",
                      help="span durations as log2 histograms, one per value of the span's 'by' arguments")
    add("--per-key", action="store_true", help="with --hist: one histogram per key value")
    add("-m", "--milliseconds", action="store_true", help="with --hist: milliseconds, not microseconds")
    add("--json", action="store_true", help="one JSON object per hit or per summary")
    add("--timeline", metavar="FILE", help="also write the hits and spans as Chrome trace-event JSON "
        "(Perfetto UI, chrome://tracing, speedscope)")
    add("-d", "--duration", type=float, metavar="SECONDS", help="stop after this many seconds")
    add("-i", "--interval", type=float, metavar="SECONDS",
        help="with --count or --hist: print (and restart) the summary this often")
    add("-l", "--list", action="store_true", help="list the probes and spans, and exit")
    add("--ebpf", action="store_true", help="print the BPF C program of the mode chosen and exit")
    add("--no-debug-info", action="store_true",
        help="print enum names as the catalog has them, not from the traced binary's DWARF")
    args = parser.parse_args(argv)
    unknown = [n for n in args.probe if n not in tool.by_name]
    unknown += [n for n in args.group if n not in {p.group for p in tool.probes}]
    unknown += [n for n in args.span if n not in {s.name for s in tool.spans}]
    for wrong, message in [
        (args.pid is None and args.binary is None and not (args.list or args.ebpf), "give -p PID or a BINARY"),
        (args.pid is not None and args.pid <= 0, "-p needs a process id above 0"),
        (args.duration is not None and not args.duration > 0, "--duration needs a number of seconds above 0"),
        (args.interval is not None and not args.interval > 0, "--interval needs a number of seconds above 0"),
        (args.interval is not None and not (args.count or args.hist), "--interval needs --count or --hist"),
        ((args.per_key or args.milliseconds or args.span) and not args.hist, "--per-key, -m and --span need --hist"),
        (args.timeline and (args.count or args.hist), "--timeline needs every hit: not with --count or --hist"),
        (args.hist and not tool.spans, "the catalog has no spans: --hist has nothing to measure"),
        (unknown, "no probe, group or span named %s (see --list)" % ", ".join(map(repr, unknown))),
    ]:
        if wrong:
            parser.error(message)
    return args


def selection(tool, args):
    """(probes to attach, spans to measure)."""
    chosen = set(args.probe) | {p.name for p in tool.probes if p.group in args.group}
    if args.hist:
        spans = [s for s in tool.spans
                 if (not args.span or s.name in args.span) and (not chosen or {s.start, s.end} & chosen)]
        names = {n for s in spans for n in (s.start, s.end)}
        return [p for p in tool.probes if p.name in names], spans
    return [p for p in tool.probes if not chosen or p.name in chosen], []


# --- the BPF program, built from the tables ------------------------------

LINE_C = string.Template("""
struct hit_$ID {
	u64 ts;
	u32 tid;
	u32 id;
	$DECLS
};
BPF_PERCPU_ARRAY(hit_${ID}_buf, struct hit_$ID, 1);  /* strings may not fit the 512-byte stack */

int probe_$ID(struct pt_regs *ctx)
{
	int zero = 0;
	struct hit_$ID *ev = hit_${ID}_buf.lookup(&zero);
	if (!ev)
		return 0;
	ev->ts = bpf_ktime_get_ns();
	ev->tid = bpf_get_current_pid_tgid();
	ev->id = $ID;
	$READS
	events.perf_submit(ctx, ev, sizeof(*ev));
	return 0;
}
""")

# A span's start time waits under its key (the thread without one) until
# its end, which adds the log2 slot of the duration to the histogram of
# its by values (or key, --per-key).
SPAN_C = string.Template("""
/* span $NAME */
struct span_${ID}_key {
	$KEY_DECLS
};
struct span_${ID}_by {
	$BY_DECLS
};
struct span_${ID}_start { u64 ns; struct span_${ID}_by by; };
struct span_${ID}_slot { u64 slot; struct span_${ID}_$SLOTOF v; };  /* a histogram's key */
struct span_${ID}_tmp { struct span_${ID}_key key; struct span_${ID}_start start; struct span_${ID}_slot slot; };
BPF_HASH(span_${ID}_starts, struct span_${ID}_key, struct span_${ID}_start, $MAX_IN_FLIGHT);
BPF_HISTOGRAM(span_${ID}_hist, struct span_${ID}_slot, $MAX_HIST_KEYS);
BPF_PERCPU_ARRAY(span_${ID}_buf, struct span_${ID}_tmp, 1);
""")

SPAN_BLOCK_C = string.Template("""
	{
		struct span_${ID}_tmp *t = span_${ID}_buf.lookup(&zero);
		if (t) {
			__builtin_memset(t, 0, sizeof(*t));
			$KEY_READS
			$BODY
		}
	}
""")

SPAN_START_C = string.Template("""$BY_READS
			t->start.ns = bpf_ktime_get_ns();
			span_${ID}_starts.update(&t->key, &t->start);""")

SPAN_END_C = string.Template("""struct span_${ID}_start *begun = span_${ID}_starts.lookup(&t->key);
			if (!begun) {
				unmatched.atomic_increment($ID);
			} else {
				u64 ns = bpf_ktime_get_ns() - begun->ns, none = 0;
				bpf_probe_read_kernel(&t->slot.v, sizeof(t->slot.v), $SLOT_FROM);
				span_${ID}_starts.delete(&t->key);
				$BY_READS
				t->slot.slot = bpf_log2l(ns / $UNIT_NS);
				span_${ID}_hist.insert(&t->slot, &none);
				u64 *count = span_${ID}_hist.lookup(&t->slot);
				if (count)
					__sync_fetch_and_add(count, 1);
			}""")


def note_types(readers):
    """{(fn_name, argument 0-based): C type} of BCC's argument readers (the widest of the probe's sites)."""
    found = re.findall(r"_bpf_readarg_(\w+?)_(\d+)\(struct pt_regs \*ctx, void \*dest, size_t len\) \{\s*"
                       r"if \(len != sizeof\((\w+)\)\)", readers)
    return {(fn, int(n) - 1): c_type for fn, n, c_type in found}


def program_text(tool, args, probes, spans, types=None):
    """The BPF C of the mode chosen; types: note_types() (None: --ebpf alone, the catalog's widths)."""
    parts = ["#include <uapi/linux/ptrace.h>", tool.structs]
    if args.count:
        parts.append("BPF_PERCPU_ARRAY(counts, u64, %d);  /* per CPU, added atomically */" % len(tool.probes))
        parts += ["int probe_%d(struct pt_regs *ctx)\n{\n\tcounts.atomic_increment(%d);\n\treturn 0;\n}"
                  % (p.number, p.number) for p in probes]
        return "\n".join(parts) + "\n"

    def reads(probe, pairs, indent):  # a buf's length is an argument the probe prints too
        if types is None:
            typed = {f.arg: f.catalog_type() for f in reversed(probe.fields) if not f.member}
        else:
            typed = {arg: t for (fn, arg), t in types.items() if fn == "probe_%d" % probe.number}
        return ("\n" + indent).join(filter(None, (f.c_read(dst, typed.get(f.arg), typed.get(f.length))
                                                  for f, dst in pairs)))

    if not args.hist:
        parts.append("BPF_PERF_OUTPUT(events);")
        for p in probes:
            decls = "\n\t".join(f.c_decl("f%d" % i) for i, f in enumerate(p.fields))
            code = reads(p, [(f, "ev->f%d" % i) for i, f in enumerate(p.fields)], "\t")
            parts.append(LINE_C.substitute(DECLS=decls or "/* no values */", READS=code, ID=p.number))
        return "\n".join(parts)
    parts.append("BPF_PERCPU_ARRAY(unmatched, u64, %d);" % len(tool.spans))
    blocks, by_name = {}, {p.name: p for p in probes}
    for s in spans:
        key_decls = "\n\t".join(f.c_decl("k%d" % i) for i, (f, _) in enumerate(s.keys)) or "u32 tid;"
        by_decls = "\n\t".join(f.c_decl("b%d" % i) for i, (f, _) in enumerate(s.by)) or "u8 none;"
        parts.append(SPAN_C.substitute(KEY_DECLS=key_decls, BY_DECLS=by_decls, SLOTOF="key" if args.per_key else "by",
                                       NAME=s.name, ID=s.number, MAX_IN_FLIGHT=MAX_IN_FLIGHT,
                                       MAX_HIST_KEYS=MAX_HIST_KEYS))
        for start in (True, False):
            probe = by_name[s.start if start else s.end]
            keys = reads(probe, [(pair[not start], "t->key.k%d" % i) for i, pair in enumerate(s.keys)], "\t\t\t")
            by = [(f, "t->%s.b%d" % ("start.by" if start else "slot.v", i))
                  for i, (f, at_start) in enumerate(s.by) if at_start == start and not (args.per_key and not start)]
            by = reads(probe, by, "\t\t\t" if start else "\t\t\t\t")
            body = (SPAN_START_C if start else SPAN_END_C).substitute(
                BY_READS=by, ID=s.number, UNIT_NS=UNITS[args.milliseconds][2],
                SLOT_FROM="&t->key" if args.per_key else "&begun->by")
            keys = keys or "t->key.tid = bpf_get_current_pid_tgid();"
            blocks.setdefault(probe.number, []).append(SPAN_BLOCK_C.substitute(BODY=body, ID=s.number, KEY_READS=keys))
    parts += ["int probe_%d(struct pt_regs *ctx)\n{\n\tint zero = 0;\n%s\treturn 0;\n}" % (n, "".join(b))
              for n, b in blocks.items()]
    return "\n".join(parts)


# --- summaries -----------------------------------------------------------

def rows(slots):
    """(low, high, count) rows from the first slot to the last with a count. Slot n holds
    [2**(n-1), 2**n) (bpf_log2l's; 0 for 0): slots 0 and 1 share the row 0 -> 1."""
    merged = {}
    for slot, count in slots.items():
        merged[max(slot, 1)] = merged.get(max(slot, 1), 0) + count
    return [(1 << (s - 1) if s > 1 else 0, (1 << s) - 1, merged.get(s, 0))
            for s in range(1, max(merged, default=1) + 1)]


def format_histogram(unit, table):
    """A histogram as BCC's print_log2_hist prints one."""
    peak = max((count for _, _, count in table), default=0)
    lines = ["%24s : count     distribution" % unit]
    for low, high, count in table:
        stars = (count * STARS + peak - 1) // peak if peak else 0
        lines.append("%10d -> %-10d : %-8d |%-*s|" % (low, high, count, STARS, "*" * stars))
    return "\n".join(lines)


class Histograms:
    """Span durations in log2 slots per span and by (or key) value: the
    change in the kernel's histograms (never cleared) since the last report."""

    def __init__(self, tool, spans, per_key, milliseconds):
        self.tool, self.spans, self.per_key = tool, {s.number: s for s in spans}, per_key
        self.unit, self.json_unit = UNITS[milliseconds][:2]
        self.seen = {}  # (span number, the key's bytes) -> count read so far

    def values(self, span, holder):
        """((label, text, json), ...) of a histogram key's by (or key) values."""
        if self.per_key and not span.keys:
            return (("tid", str(holder.tid), holder.tid),)
        fields = [pair[0] for pair in span.keys] if self.per_key else [f for f, _ in span.by]
        member = "k%d" if self.per_key else "b%d"
        return tuple((f.label,) + f.value(getattr(holder, member % i), self.tool.enums) for i, f in enumerate(fields))

    def report(self, bpf, unmatched):
        """(the JSON objects, as ``probegen trace --hist --json`` prints them, without
        empty buckets; the text) of the histograms' counts since the last report (in span
        then first-seen order) and of the ends without a start (of any span)."""
        taken = {}  # (span number, ((label, text, json), ...)) -> {slot: count}
        for number, span in self.spans.items():
            for key, count in bpf["span_%d_hist" % number].items():
                raw = (number, bytes(key))
                change, self.seen[raw] = count.value - self.seen.get(raw, 0), count.value
                if change:
                    slots = taken.setdefault((number, self.values(span, key.v)), {})
                    slots[key.slot] = slots.get(key.slot, 0) + change
        objects, text = [], []
        for (number, values), slots in taken.items():
            span, table = self.spans[number].name, rows(slots)
            title = ["span %s%s" % (span, ":" * bool(values))] + ["%s=%s" % (l, t) for l, t, _ in values]
            text += ["", " ".join(title), format_histogram(self.unit, table)]
            objects.append({"type": "span", "span": span, "key" if self.per_key else "by": {l: j for l, _, j in values},
                            "unit": self.json_unit, "count": sum(slots.values()),
                            "buckets": [{"min": low, "max": high, "count": n} for low, high, n in table if n]})
        for number, count in unmatched.items():
            if count and number in self.spans:
                span = self.spans[number].name
                text.append("span %s: %d end%s without a start" % (span, count, "s" * (count != 1)))
                objects.append({"type": "unmatched", "span": span, "count": count})
        return objects, "\n".join(text).lstrip("\n")


def changes(table, size):
    """A kernel per-CPU array of running totals: each next() gives the change since the one before."""
    last = [0] * size
    while True:
        now = [table.sum(table.Key(n)).value for n in range(size)]
        yield {n: new - old for n, (new, old) in enumerate(zip(now, last))}
        last = now


def count_report(probes, counts):
    """(the JSON objects, the text) of the probes' hits counted."""
    hit, width = [p for p in probes if counts.get(p.number)], max([len("PROBE")] + [len(p.name) for p in probes])
    text = ["%-*s %10s" % (width, "PROBE", "COUNT")] + ["%-*s %10d" % (width, p.name, counts[p.number]) for p in hit]
    return [{"type": "hits", "probe": p.name, "count": counts[p.number]} for p in hit], "\n".join(text)


# --- a line per hit ------------------------------------------------------

class HitHeader(ct.Structure):
    _fields_ = [("ts", ct.c_uint64), ("tid", ct.c_uint32), ("id", ct.c_uint32)]


def decode(tool, data):
    """(ts, tid, probe, ((label, text, json), ...)) of a hit's event."""
    probe = tool.probes[ct.cast(data, ct.POINTER(HitHeader)).contents.id]
    event = ct.cast(data, ct.POINTER(probe.event)).contents
    values = tuple((f.label,) + f.value(getattr(event, "f%d" % i), tool.enums) for i, f in enumerate(probe.fields))
    return event.ts, event.tid, probe, values


def hit_line(hit, as_json):
    ts, _, probe, values = hit
    if as_json:
        return json.dumps({"type": "hit", "probe": probe.name, "ts_ns": ts, "args": {l: j for l, _, j in values}})
    return " ".join(["%d.%06d: %s" % (ts // 1000000000, ts % 1000000000 // 1000, probe.name)]
                    + ["%s=%s" % (label, shown) for label, shown, _ in values])


class Reorder:
    """Hits (timestamp in ns first) in timestamp order across CPUs' buffers: each
    held REORDER_NS, at most REORDER_MAX of them; one older than a hit printed
    prints at once, counted late. probegen trace orders bpftrace's lines with it."""

    def __init__(self, out):
        self.out, self.held, self.order, self.printed, self.late = out, [], 0, 0, 0

    def add(self, hit):
        if hit[0] < self.printed:
            self.late += 1
            return self.out(hit)
        self.order += 1
        heapq.heappush(self.held, (hit[0], self.order, hit))
        if len(self.held) > REORDER_MAX:
            self.release(self.held[0][0])

    def release(self, before=float("inf")):
        while self.held and self.held[0][0] <= before:
            self.printed, _, hit = heapq.heappop(self.held)
            self.out(hit)

    def due(self):
        self.release(time.monotonic_ns() - REORDER_NS)  # bpf_ktime_get_ns is CLOCK_MONOTONIC


# Hits and spans as Chrome trace-event JSON (Perfetto UI, chrome://tracing, speedscope): a track
# per thread, an instant event per hit, a slice per span on the thread that started it.
def trace_events(hits, spans, pid):
    """The trace-event object of ``hits`` [(ns, tid, probe, {arg: value})] in time
    order and ``spans`` [(name, start probe, end probe, [(start arg, end arg)])],
    an end matched to a start by those arguments' values (else by thread)."""
    events, open_ = [], {}
    for ns, tid, probe, args in hits:
        events.append({"name": probe, "ph": "i", "s": "t", "ts": ns / 1000, "pid": pid, "tid": tid, "args": args})
        for name, start, end, keys in spans:
            if probe == start:
                open_[(name, tuple(args.get(a) for a, _ in keys) if keys else tid)] = (ns, tid, args)
            elif probe == end:
                begun = open_.pop((name, tuple(args.get(b) for _, b in keys) if keys else tid), None)
                if begun is not None:
                    events.append({"name": name, "ph": "X", "ts": begun[0] / 1000, "dur": (ns - begun[0]) / 1000,
                                   "pid": pid, "tid": begun[1], "args": begun[2]})
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def listing(tool):
    lines = ["probes (GROUP PROBE: doc):"]
    lines += ["  %s %s: %s" % (p.group, p.name, p.doc) for p in tool.probes]
    if tool.spans:
        lines.append("spans (--hist):")
        for s in tool.spans:
            key = ", ".join(f.label for f, _ in s.keys) or "thread"
            by = "; by " + ", ".join(f.label for f, _ in s.by) if s.by else ""
            lines.append("  %s: %s -> %s, key %s%s: %s" % (s.name, s.start, s.end, key, by, s.doc))
    return "\n".join(lines)


# --- enum names from debug info ------------------------------------------

# Root only opens the traced files; a child without root parses them (doc/security.md).
DWARF_SECONDS = 10
DWARF_MEMORY = 1 << 30  # address space of the child
DWARF_OUTPUT = 1 << 20  # bytes of results read from it
SECTION_BYTES = 256 << 20  # a debug section larger than this, inflated or not, is not read
# A compressed section's claimed size is believed up to this (real DWARF: 3-10x).
EXPANSION, EXPANSION_SLACK = 64, 1 << 20
# The reason no file's enums can be read: the child stops there, and so do its results.
NO_PYELFTOOLS = "pyelftools is not installed for %s (Debian: python3-pyelftools)" % sys.executable


def printed_enums(probes, spans):
    """The enums the selected probes' lines (or spans' histograms) print."""
    fields = [f for s in spans for f, _ in s.keys + s.by] if spans else [f for p in probes for f in p.fields]
    return list(dict.fromkeys(f.enum for f in fields if f.enum is not None))


def open_regular(path):
    """``path`` opened for reading if it is a regular file; never blocks."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError("not a regular file")
    return os.fdopen(fd, "rb")


def dwarf_enums(file, wanted):
    """{enum: ((enumerator, value), ...)} of the ``wanted`` enums at the top of
    the file's units, read until all are found; None without DWARF."""
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(file)
    debug = [s for s in elf.iter_sections()  # the sections get_dwarf_info reads
             if s.name.startswith((".debug_", ".zdebug_")) or s.name in (".eh_frame", ".gnu_debugaltlink")]
    if not any(s.name in (".debug_info", ".zdebug_info") for s in debug):
        return None
    for section in debug:  # data_size: inflated, as the compression header says (pyelftools inflates no more)
        if section.name.startswith(".zdebug_"):
            raise ValueError("GNU .zdebug compression is not read")
        if section.data_size > SECTION_BYTES:
            raise ValueError("%s holds %d bytes, over %d" % (section.name, section.data_size, SECTION_BYTES))
        if section.compressed:
            check_claim(section)
    wanted = {name.encode("utf-8", "surrogateescape"): name for name in wanted}
    found = {}
    for unit in elf.get_dwarf_info().iter_CUs():
        for die in unit.get_top_DIE().iter_children():
            if die.tag != "DW_TAG_enumeration_type" or "DW_AT_declaration" in die.attributes:
                continue
            name = die.attributes.get("DW_AT_name")
            enum = wanted.get(name.value) if name is not None else None
            if enum is not None and enum not in found:
                found[enum] = tuple(
                    (text(child.attributes["DW_AT_name"].value), child.attributes["DW_AT_const_value"].value)
                    for child in die.iter_children() if child.tag == "DW_TAG_enumerator")
        if len(found) == len(wanted):
            break
    return found


def check_claim(section):
    """ValueError if a compressed section claims too much or inflates past its
    claim (a zip bomb), inflated a chunk at a time, keeping none."""
    stored, claimed = section["sh_size"], section.data_size
    if claimed > stored * EXPANSION + EXPANSION_SLACK:
        raise ValueError("%s claims %d bytes inflated from %d" % (section.name, claimed, stored))
    header = section.structs.Elf_Chdr.sizeof()
    section.stream.seek(section["sh_offset"] + header)
    data, inflater, total = section.stream.read(max(stored - header, 0)), zlib.decompressobj(), 0
    while total <= claimed and not inflater.eof:
        out = inflater.decompress(data, 1 << 20)
        if not out and not inflater.unconsumed_tail:
            break  # the stream ends early: pyelftools says so
        total, data = total + len(out), inflater.unconsumed_tail
    if total > claimed:
        raise ValueError("%s inflates to more than the %d bytes it claims" % (section.name, claimed))


def confine(uid, gid):
    """Give up root for good, and bound what parsing may cost."""
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    ct.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
    resource.setrlimit(resource.RLIMIT_AS, (DWARF_MEMORY, DWARF_MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (DWARF_SECONDS, DWARF_SECONDS))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def owner(pid):
    """The traced process's (uid, gid), or nobody's for root's or none."""
    with contextlib.suppress(OSError, TypeError):
        info = os.stat("/proc/%d" % pid)
        if info.st_uid:
            return info.st_uid, info.st_gid
    import pwd
    try:
        return pwd.getpwnam("nobody")[2:4]
    except KeyError:
        return 65534, 65534


def read_enums(files, wanted, pid=None, seconds=DWARF_SECONDS):
    """[(shown name, {enum: enumerators} or None, why not or None)] of the
    files until the wanted enums are found, parsed by a confined child."""
    results = [[shown, None, "debug info of '%s' not read within %d s" % (shown, seconds)] for shown, _ in files]
    opened = []
    for result, (shown, path) in zip(results, files):
        try:
            opened.append(open_regular(path))
        except (OSError, ValueError) as exc:
            opened.append(None)
            result[2] = "debug info of '%s' unusable: %s" % (shown, getattr(exc, "strerror", None) or exc)
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # no return from here
        try:
            os.close(reader)
            if os.getuid() == 0:
                confine(*owner(pid))
            missing = list(wanted)
            for number, ((shown, _), file) in enumerate(zip(files, opened)):
                if not missing or file is None:
                    continue
                found = None
                try:
                    found = dwarf_enums(file, missing)
                    why = "'%s' has no debug info" % shown if found is None else None
                except ImportError:
                    why, missing = NO_PYELFTOOLS, []
                except Exception as exc:  # MemoryError too
                    why = "debug info of '%s' unusable: %s" % (shown, printable(str(exc)) or type(exc).__name__)
                missing = [e for e in missing if e not in (found or {})]
                os.write(writer, (json.dumps([number, found, why]) + "\n").encode())
        finally:
            os._exit(0)
    os.close(writer)
    for file in filter(None, opened):
        file.close()
    data, deadline = b"", time.monotonic() + seconds
    while len(data) < DWARF_OUTPUT and select.select([reader], [], [], max(0, deadline - time.monotonic()))[0]:
        chunk = os.read(reader, 65536)
        if not chunk:
            break
        data += chunk
    os.close(reader)
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    for line in data[:DWARF_OUTPUT].splitlines():
        with contextlib.suppress(ValueError, TypeError, IndexError, AttributeError):  # the last may be cut short
            number, found, why = json.loads(line)
            if found is not None:  # plain data, checked: the child may have been taken over by what it parsed
                found = {enum: [[name + "", int(value)] for name, value in pairs] for enum, pairs in found.items()}
            results[number][1:] = [found, why if why is None or why.isprintable() else printable(why)]
    last = next((n for n, r in enumerate(results) if r[2] == NO_PYELFTOOLS), len(results))
    return [tuple(r) for r in results[:last + 1]]


def shown_names(enumerators, strip):
    """value -> printed name as the catalog's: prefix stripped, an alias keeping the first name."""
    names = {}
    for name, value in enumerators:
        names.setdefault(value, printable(name.removeprefix(strip) or name))  # never stripped to nothing
    return names


def traced_files(args, holders):
    """(shown name, path) of the executable (-p) or BINARY, then the files holding the probes, each once."""
    files = [(args.binary, args.binary)] if args.binary is not None else []
    if args.pid is not None:
        exe = "/proc/%d/exe" % args.pid
        with contextlib.suppress(OSError):
            files.insert(0, (os.readlink(exe), exe))
    unique = {}
    for shown, path in files + [(text(path), text(path)) for path in holders]:
        try:
            key = os.stat(path)[1:3]  # inode, device
        except OSError:
            key = path
        unique.setdefault(key, (printable(shown), path))
    return list(unique.values())


def use_debug_info(tool, enums, files, pid=None):
    """Each enum's names from the first file's DWARF that has it (files None:
    --no-debug-info), into the tool's tables; returns the lines saying each one's source."""
    missing, reasons, by_file = list(enums), [] if files is not None else ["--no-debug-info"], {}
    for shown, found, reason in read_enums(files, enums, pid) if enums and files else []:
        if reason:
            reasons.append(reason)
            continue
        for enum in [e for e in found or () if e in missing]:  # each once, whatever the child sent
            table = tool.enums[enum]
            catalogs, table["names"] = table["names"], shown_names(found[enum], table["strip"])
            missing.remove(enum)
            differs = " (differs from the catalog's)" if table["names"] != catalogs else ""
            by_file.setdefault(shown, []).append(enum + differs)
        if missing:
            reasons.append("not in the debug info of '%s'" % shown)
    lines = ["enum names from the debug info of '%s': %s" % (shown, ", ".join(done)) for shown, done in by_file.items()]
    why = "; ".join(reasons) or "no file to read"
    return lines + ["enum names of %s from the catalog (as the tool has them): %s" % (enum, why) for enum in missing]


# --- attaching -----------------------------------------------------------

class BccUsdt(ct.Structure):
    """libbcc's struct bcc_usdt (BCC 0.26), with the semaphore's offset the binding's copy lacks."""

    _fields_ = [
        ("provider", ct.c_char_p), ("name", ct.c_char_p), ("bin_path", ct.c_char_p),
        ("semaphore", ct.c_uint64), ("num_locations", ct.c_int), ("num_arguments", ct.c_int),
        ("semaphore_offset", ct.c_uint64),
    ]


class Libbcc:
    """The libbcc calls tools make to attach, on a handle of their own (BCC's binding
    declares bpf_attach_uprobe without the semaphore's offset)."""

    def __init__(self):
        self.lib, self.fds = ct.CDLL("libbcc.so.0", use_errno=True), []  # fds: the uprobes attached
        self.callback = ct.CFUNCTYPE(None, ct.POINTER(BccUsdt))
        for name, result, *arguments in (
                ("bpf_attach_uprobe", ct.c_int, ct.c_int, ct.c_int, ct.c_char_p, ct.c_char_p, ct.c_uint64, ct.c_int,
                 ct.c_uint32),
                ("bpf_close_perf_event_fd", ct.c_int, ct.c_int),
                ("bcc_usdt_foreach", None, ct.c_void_p, self.callback)):
            function = getattr(self.lib, name)
            function.restype, function.argtypes = result, arguments

    def semaphore_offsets(self, context):
        """(binary path, provider, probe) -> the semaphore's file offset, 0 without one."""
        found = {}

        def note(usdt):
            probe = usdt.contents
            found[(probe.bin_path, probe.provider, probe.name)] = probe.semaphore_offset if probe.semaphore else 0

        self.lib.bcc_usdt_foreach(context, self.callback(note))
        return found

    def attach(self, bpf, usdt, provider, names):
        """Attach every enabled location (names: fn_name -> probe name) into self.fds; None, or an error."""
        offsets = self.semaphore_offsets(usdt.get_context())
        for binary, fn_name, address, pid in usdt.enumerate_active_probes():
            name = names[fn_name]
            ref_ctr_offset = offsets.get((binary, provider.encode(), name.encode()), 0)
            function = bpf.load_func(fn_name, bpf.KPROBE)
            # Only a fallback through tracefs uses the name; unique per location and tool.
            ev_name = b"probegen_%d_%x_%d" % (os.getpid(), address, len(self.fds))
            fd = self.lib.bpf_attach_uprobe(function.fd, 0, ev_name, binary, address, pid, ref_ctr_offset)
            if fd < 0:
                return "cannot attach probe %s at %s:0x%x (semaphore offset 0x%x): %s" % (
                    name, printable(text(binary)), address, ref_ctr_offset, os.strerror(ct.get_errno() or -fd))
            self.fds.append(fd)

    def detach(self):
        for fd in self.fds:
            self.lib.bpf_close_perf_event_fd(fd)


def fail(message):
    warn("error: " + message)
    return 2


def stop_when(pid):
    """Whether to stop, as a function: after Ctrl-C or SIGTERM (an exception in BCC's
    callbacks would be swallowed) or the traced process's exit (its pidfd readable)."""
    signalled, pidfd = [], None
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: signalled.append(True))
    with contextlib.suppress(OSError, AttributeError):
        pidfd = os.pidfd_open(pid) if pid is not None else None
    return lambda: bool(signalled) or (pidfd is not None and bool(select.select([pidfd], [], [], 0)[0]))


# --- the run -------------------------------------------------------------

def warn(message):
    print("%s: %s" % (os.path.basename(sys.argv[0]), message), file=sys.stderr)


def bind(tool, usdt, probes, spans):
    """Bind the fields to the enabled probes' notes, warning of other argument
    counts: (note types, spans with all their values)."""
    types = note_types(usdt.get_text())
    for found in usdt.enumerate_probes():
        probe = tool.by_name.get(text(found.name))
        if probe in probes and found.num_arguments != probe.nargs:
            warn("warning: probe %s has %d arguments in '%s', the catalog %d: %s" % (
                probe.name, found.num_arguments, printable(text(found.bin_path)), probe.nargs,
                "values past its last print as ?" if found.num_arguments < probe.nargs else
                "the catalog's are read by position"))
    for probe in probes:
        for field in probe.fields:
            field.bind(types.get(("probe_%d" % probe.number, field.arg)))
    kept = []
    for span in spans:
        start, end = tool.by_name[span.start], tool.by_name[span.end]
        fields = [(f, start) for f, _ in span.keys] + [(f, end) for _, f in span.keys]
        fields += [(f, start if at_start else end) for f, at_start in span.by]
        for field, probe in fields:  # a probe not enabled has no types
            field.bind(types.get(("probe_%d" % probe.number, field.arg)))
        if any(f.missing for f, _ in fields) or not {start, end} <= set(probes):  # no arguments: no types to miss
            warn("warning: span %s not measured: its probes or their arguments are not all in the traced files"
                 % span.name)
        else:
            kept.append(span)
    return types, kept


def main(tool, argv=None):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # piped into head: end quietly
    args = parse_args(tool, argv)
    if args.list:
        print(listing(tool))
        return 0
    probes, spans = selection(tool, args)
    if not probes:
        return fail("no probe selected")
    if args.ebpf and args.pid is None and args.binary is None:
        print(program_text(tool, args, probes, spans))
        return 0
    try:
        from bcc import BPF, USDT
    except ImportError:
        return fail("cannot import bcc: install python3-bpfcc and run with /usr/bin/python3")
    where = printable(args.binary) if args.binary else "pid %d" % args.pid
    try:
        usdt = USDT(pid=args.pid, path=args.binary)
    except Exception as exc:  # BCC raises plain Exception for a bad pid or path
        return fail("cannot read the probes of %s: %s" % (where, printable(str(exc))))
    absent = []
    for probe in probes:
        try:
            usdt.enable_probe(probe="%s:%s" % (tool.provider, probe.name), fn_name="probe_%d" % probe.number)
        except Exception:
            absent.append(probe.name)
    probes = [p for p in probes if p.name not in absent]
    if absent and probes:
        warn("warning: not traced, not found in %s: %s" % (where, ", ".join(absent)))
    if not probes:
        return fail("none of the probes was found in %s" % where if args.pid is not None else
                    "no probe could be enabled in %s: probes with semaphores (as the generated header "
                    "makes them) are enabled only in a running process: give -p PID" % where)
    types, spans = bind(tool, usdt, probes, spans)
    if args.hist and not spans:
        return fail("no span has both its probes in %s" % where)
    program = usdt.get_text() + program_text(tool, args, probes, spans, types)  # BCC's argument readers first
    if args.ebpf:
        print(program)
        return 0
    enums = [] if args.count else printed_enums(probes, spans)
    holders = sorted({b for b, _, _, _ in usdt.enumerate_active_probes()})
    for line in use_debug_info(tool, enums, None if args.no_debug_info else traced_files(args, holders), args.pid):
        warn(line)
    stop = stop_when(args.pid)  # from here, Ctrl-C ends the tool at its next turn, not inside BCC
    try:
        bpf = BPF(text=program)
    except Exception as exc:
        return fail("cannot load the BPF program (root needed): %s" % exc)
    libbcc = Libbcc()
    try:
        error = libbcc.attach(bpf, usdt, tool.provider, {b"probe_%d" % p.number: p.name for p in probes})
        return fail(error) if error else run(tool, args, bpf, probes, spans, stop)
    finally:
        libbcc.detach()


def run(tool, args, bpf, probes, spans, stop):
    """Collect until Ctrl-C, SIGTERM, --duration or the process's exit; print the summaries."""
    sys.stdout.reconfigure(line_buffering=True, errors="surrogateescape")
    hits, reorder = [], None
    if args.count:
        counts, mode = changes(bpf["counts"], len(tool.probes)), "counting hits"
    elif args.hist:
        histograms = Histograms(tool, spans, args.per_key, args.milliseconds)
        unmatched = changes(bpf["unmatched"], len(tool.spans))
        mode = "%d span%s as histograms" % (len(spans), "s" * (len(spans) != 1))
    else:
        mode = "a line per hit"

        def out(hit):
            print(hit_line(hit, args.json))
            if args.timeline:
                hits.append(hit)

        reorder = Reorder(out)
        bpf["events"].open_perf_buffer(lambda cpu, data, size: reorder.add(decode(tool, data)), page_cnt=64,
                                       lost_cb=lambda count: warn("warning: lost %d events" % count))

    def summary(stamp=None):
        if stamp:  # an --interval's summary begins
            print(json.dumps({"type": "interval", "time": stamp}) if args.json else "[%s]" % stamp)
        objects, shown = count_report(probes, next(counts)) if args.count else histograms.report(bpf, next(unmatched))
        for line in [json.dumps(o) for o in objects] if args.json else [shown]:
            print(line)

    if args.json:
        print(json.dumps({"type": "attached", "probes": len(probes)}))
    else:
        print("Tracing %d probe%s (%s): %s. Hit Ctrl-C to end."
              % (len(probes), "s" * (len(probes) != 1), tool.provider, mode))
    now = time.monotonic()
    deadline, next_summary = now + (args.duration or float("inf")), now + (args.interval or float("inf"))
    while not stop():
        if reorder:
            bpf.perf_buffer_poll(timeout=POLL_MS)
            reorder.due()
        else:
            time.sleep(POLL_MS / 1000)
        now = time.monotonic()
        if now >= deadline:
            break
        if now >= next_summary:
            summary(time.strftime("%H:%M:%S"))
            next_summary += args.interval
    if reorder:
        bpf.perf_buffer_poll(timeout=0)  # what arrived before the stop
        reorder.release()
        if reorder.late:
            warn("warning: %d hits arrived over %d ms late and printed out of order"
                 % (reorder.late, REORDER_NS // 1000000))
    if args.count or args.hist:
        summary(time.strftime("%H:%M:%S") if args.interval else None)
    if args.timeline:
        spans = [(s.name, s.start, s.end, [(a.label, b.label) for a, b in s.keys]) for s in tool.spans]
        with open(args.timeline, "w") as file:
            json.dump(trace_events([(ts, tid, p.name, {l: j for l, _, j in v}) for ts, tid, p, v in hits], spans,
                                   args.pid or 0), file)
    atexit.unregister(bpf.cleanup)  # BCC's cleanup, now and without its traceback if it fails
    try:
        bpf.cleanup()
    except Exception as exc:
        print("warning: %s (the probes detach when this process exits)" % exc, file=sys.stderr)
    return 0
