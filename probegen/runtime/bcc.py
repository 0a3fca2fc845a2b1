"""The catalog-independent part of probegen's generated BCC tools.

``probegen bcc`` writes one tool per catalog: this module's source, copied
in whole, then the catalog's tables and BPF C, then ``main(TOOL)``. The
tool runs with the system's /usr/bin/python3, where BCC's binding lives
and probegen need not be installed, so this module imports nothing but
the standard library at load time (``bcc`` only inside ``main``) and runs
on Python 3.9 and later.

Modes: a line per hit (default), ``--count`` (hits per probe, counted in
the kernel), ``--hist`` (span durations as log2 histograms: a span's start
time is kept in a BPF hash under its key until its end arrives, and the
end sends the duration), each also as ``--json``: one object per line,
with a "type": "attached" (tracing starts), "hit" (one per hit), "span"
(a histogram), "unmatched" (ends without a start), "hits" (a probe's
count), "interval" (an --interval summary begins); the summaries as
``probegen trace --json`` prints them.

Enum names: the tables hold the catalog's, one version's; at start a tool
reads each enum it prints from the traced files' DWARF (the executable,
then the files holding the probes) with pyelftools when the system Python
has it, and prints those files' names, saying on stderr which source each
enum's names came from (``--no-debug-info``: the catalog's).

Attaching: BCC 0.26's Python binding calls libbcc's ``bpf_attach_uprobe``
with six arguments where the C function takes seven, so the kernel reads
a garbage ``ref_ctr_offset`` and refuses the probe when another tracer
(bpftrace) attached it with the right one. Tools let BCC read the notes
and write the argument readers, then attach every probe themselves with
the right prototype: ``ref_ctr_offset`` is the semaphore's file offset,
or 0 for a probe without semaphore.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes as ct
import json
import os
import select
import signal
import stat
import sys
import time

# ctypes types of BCC's exact-width C types, as the tables name them.
C_TYPES = {
    "s8": ct.c_int8, "u8": ct.c_uint8, "s16": ct.c_int16, "u16": ct.c_uint16,
    "s32": ct.c_int32, "u32": ct.c_uint32, "s64": ct.c_int64, "u64": ct.c_uint64,
}
UNITS = {False: ("usecs", "us", 1000), True: ("msecs", "ms", 1000000)}  # by -m: text, JSON, ns per unit
STARS = 40  # width of a histogram's distribution column
POLL_MS = 100  # how long a turn of the main loop waits for events


class UsageError(Exception):
    """Bad options or input: one line, exit 2."""


# --- values --------------------------------------------------------------

def text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def formatter(spec, enums):
    """(text, json) functions of a raw value, for a field's format spec:
    ("int",), ("hex", bits), ("pointer",), ("string",), ("enum", name)."""
    kind = spec[0]
    if kind == "string":
        return text, text
    if kind == "pointer":
        show = lambda value: "0x%x" % value if value else "(nil)"  # as printf's %p  # noqa: E731
        return show, show
    if kind == "hex":
        mask = (1 << spec[1]) - 1
        show = lambda value: "0x%x" % (value & mask)  # noqa: E731
        return show, show
    if kind == "enum":
        # The enum's dict itself: names read from the traced binary replace its content.
        names, unknown, _ = enums[spec[1]]
        show = lambda value: names.get(value) or "%s(%d)" % (unknown, value)  # noqa: E731
        return show, show
    return str, int


class Field:
    """One value of an event: its label, struct member and how it prints."""

    def __init__(self, label, member, c_type, spec, enums):
        self.label = label
        self.member = member
        self.enum = spec[1] if spec[0] == "enum" else None
        if isinstance(c_type, int):  # a string: a char array of that many bytes
            self.c_type = ct.c_char * c_type
        else:
            self.c_type = C_TYPES[c_type]
        self.show, self.json = formatter(spec, enums)


def event_class(name, head, fields):
    return type(name, (ct.Structure,), {"_fields_": head + [(f.member, f.c_type) for f in fields]})


class Probe:
    def __init__(self, number, name, group, doc, fields, enums):
        self.number = number
        self.name = name
        self.group = group
        self.doc = doc
        self.fields = [Field(*f, enums) for f in fields]
        self.event = event_class("Hit%d" % number, [("ts", ct.c_uint64), ("id", ct.c_uint32)], self.fields)


class Span:
    def __init__(self, number, name, doc, start, end, keys, by, enums):
        self.number = number
        self.name = name
        self.doc = doc
        self.start = start
        self.end = end
        self.keys = [Field(*f, enums) for f in keys]  # empty: matched by thread, "tid"
        self.by = [Field(*f, enums) for f in by]
        self.key_fields = self.keys or [Field("tid", "tid", "u32", ("int",), enums)]
        # The key is a struct of its own in the C event (the hash map's key).
        key = event_class("Span%dKey" % number, [], self.key_fields)
        self.event = event_class("Span%d" % number, [("ns", ct.c_uint64), ("span", ct.c_uint32), ("key", key)], self.by)

    def values(self, event, per_key):
        """((label, text, json), ...) of the key or by fields of an event."""
        fields, holder = (self.key_fields, event.key) if per_key else (self.by, event)
        return tuple((f.label, f.show(getattr(holder, f.member)), f.json(getattr(holder, f.member))) for f in fields)


class Tool:
    """A catalog's tables, as the generated part of a tool gives them."""

    def __init__(self, provider, description, program, enums, probes, spans):
        self.provider = provider
        self.description = description
        self.program = program
        # name -> (value -> printed name, printed for a value without one, prefix names lose)
        self.enums = enums = {name: (dict(names), unknown, strip) for name, (names, unknown, strip) in enums.items()}
        self.catalog_names = {name: dict(names) for name, (names, _, _) in enums.items()}
        self.probes = [Probe(n, *p, enums) for n, p in enumerate(probes)]
        self.spans = [Span(n, *s, enums) for n, s in enumerate(spans)]
        self.by_name = {p.name: p for p in self.probes}


class HitHeader(ct.Structure):
    _fields_ = [("ts", ct.c_uint64), ("id", ct.c_uint32)]


class SpanHeader(ct.Structure):
    _fields_ = [("ns", ct.c_uint64), ("span", ct.c_uint32)]


# --- options -------------------------------------------------------------

def parser_for(tool):
    parser = argparse.ArgumentParser(description=tool.description)
    parser.add_argument("-p", "--pid", type=int, help="trace this process (needed for probes with semaphores)")
    parser.add_argument("binary", nargs="?", help="the executable or library holding the probes "
                        "(alone: every process running it, for probes without semaphores)")
    parser.add_argument("--probe", action="append", default=[], metavar="NAME", help="trace this probe (repeatable)")
    parser.add_argument("--group", action="append", default=[], metavar="NAME",
                        help="trace this group's probes (repeatable)")
    parser.add_argument("--span", action="append", default=[], metavar="NAME", help="with --hist: this span (repeatable)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--count", action="store_true", help="count hits per probe; print the counts at the end")
    mode.add_argument("--hist", action="store_true",
                      help="span durations as log2 histograms, one per value of the span's 'by' arguments")
    parser.add_argument("--per-key", action="store_true", help="with --hist: one histogram per key value")
    parser.add_argument("-m", "--milliseconds", action="store_true", help="with --hist: milliseconds, not microseconds")
    parser.add_argument("--json", action="store_true", help="one JSON object per hit or per summary")
    parser.add_argument("-d", "--duration", type=float, metavar="SECONDS", help="stop after this many seconds")
    parser.add_argument("-i", "--interval", type=float, metavar="SECONDS",
                        help="with --count or --hist: print (and restart) the summary this often")
    parser.add_argument("-l", "--list", action="store_true", help="list the probes and spans, and exit")
    parser.add_argument("--ebpf", action="store_true", help="print the BPF C program and exit")
    parser.add_argument("--no-debug-info", action="store_true",
                        help="print enum names as the catalog has them, not from the traced binary's DWARF")
    return parser


def parse_args(tool, argv=None):
    parser = parser_for(tool)
    args = parser.parse_args(argv)
    try:
        check_args(tool, args)
    except UsageError as exc:
        parser.error(str(exc))
    return args


def check_args(tool, args):
    if args.pid is None and args.binary is None and not (args.list or args.ebpf):
        raise UsageError("give -p PID or a BINARY")
    if args.pid is not None and args.pid <= 0:
        raise UsageError("-p needs a process id above 0")
    for value, what in ((args.duration, "--duration"), (args.interval, "--interval")):
        if value is not None and not value > 0:
            raise UsageError("%s needs a number of seconds above 0" % what)
    if args.interval is not None and not (args.count or args.hist):
        raise UsageError("--interval needs --count or --hist")
    if (args.per_key or args.milliseconds or args.span) and not args.hist:
        raise UsageError("--per-key, -m and --span need --hist")
    if args.hist and not tool.spans:
        raise UsageError("the catalog has no spans: --hist has nothing to measure")
    unknown = [n for n in args.probe if n not in tool.by_name]
    unknown += [n for n in args.group if n not in {p.group for p in tool.probes}]
    unknown += [n for n in args.span if n not in {s.name for s in tool.spans}]
    if unknown:
        raise UsageError("no probe, group or span named %s (see --list)" % ", ".join(map(repr, unknown)))


def selection(tool, args):
    """(probes to attach, spans to measure)."""
    chosen = set(args.probe) | {p.name for p in tool.probes if p.group in args.group}
    if args.hist:
        spans = [s for s in tool.spans
                 if (not args.span or s.name in args.span) and (not chosen or {s.start, s.end} & chosen)]
        names = {n for s in spans for n in (s.start, s.end)}
        return [p for p in tool.probes if p.name in names], spans
    return [p for p in tool.probes if not chosen or p.name in chosen], []


def program_text(tool, args, spans):
    """The BPF C for this run: the tables' program after the switches that
    pick its mode and spans."""
    mode = "PG_COUNT" if args.count else "PG_SPANS" if args.hist else "PG_LINES"
    switches = ["#define %s 1" % mode] + ["#define PG_SPAN_%d 1" % s.number for s in spans]
    return "\n".join(switches) + "\n" + tool.program


# --- summaries -----------------------------------------------------------

def log2_slot(value):
    """Slot of a histogram: 0 for 0, then n for [2**(n-1), 2**n)."""
    return int(value).bit_length()


def slot_range(slot):
    """(low, high) of a printed row; slots 0 and 1 share the row 0 -> 1."""
    if slot <= 1:
        return 0, 1
    return 1 << (slot - 1), (1 << slot) - 1


def rows(slots):
    """(low, high, count) rows from the first slot to the last with a count."""
    merged = {}
    for slot, count in slots.items():
        merged[max(slot, 1)] = merged.get(max(slot, 1), 0) + count
    last = max(merged, default=1)
    return [slot_range(s) + (merged.get(s, 0),) for s in range(1, last + 1)]


def format_histogram(unit, table):
    """A histogram as BCC's tools print one."""
    peak = max((count for _, _, count in table), default=0)
    lines = ["%24s : count     distribution" % unit]
    for low, high, count in table:
        stars = (count * STARS + peak - 1) // peak if peak else 0
        lines.append("%10d -> %-10d : %-8d |%-*s|" % (low, high, count, STARS, "*" * stars))
    return "\n".join(lines)


class Histograms:
    """Span durations in log2 slots, per span and per value of its by (or
    key) arguments; unmatched ends per span from the kernel's counters."""

    def __init__(self, spans, per_key, milliseconds):
        self.spans = {s.number: s for s in spans}
        self.per_key = per_key
        self.unit, self.json_unit, self.divisor = UNITS[milliseconds]
        self.slots = {}  # (span number, ((label, text, json), ...)) -> {slot: count}

    def add(self, data):
        number = ct.cast(data, ct.POINTER(SpanHeader)).contents.span
        span = self.spans.get(number)
        if span is None:
            return
        event = ct.cast(data, ct.POINTER(span.event)).contents
        values = span.values(event, self.per_key)
        slots = self.slots.setdefault((number, values), {})
        slot = log2_slot(event.ns // self.divisor)
        slots[slot] = slots.get(slot, 0) + 1

    def take(self):
        """The histograms since the last take, in span then first-seen order."""
        taken, self.slots = self.slots, {}
        return sorted(taken.items(), key=lambda item: item[0][0])

    def text(self, taken, unmatched):
        out = []
        for (number, values), slots in taken:
            title = "span %s" % self.spans[number].name
            if values:
                title += ": " + " ".join("%s=%s" % (label, shown) for label, shown, _ in values)
            out += ["", title, format_histogram(self.unit, rows(slots))]
        for number, count in unmatched.items():
            if count:
                out.append("span %s: %d end%s without a start" % (self.spans[number].name, count, "s" * (count != 1)))
        return "\n".join(out)

    def json(self, taken, unmatched):
        """As ``probegen trace --hist --json`` prints them (empty buckets left out)."""
        objects = []
        for (number, values), slots in taken:
            objects.append({
                "type": "span", "span": self.spans[number].name,
                "key" if self.per_key else "by": {label: value for label, _, value in values},
                "unit": self.json_unit, "count": sum(slots.values()),
                "buckets": [{"min": low, "max": high, "count": count} for low, high, count in rows(slots) if count],
            })
        for number, count in unmatched.items():
            if count:
                objects.append({"type": "unmatched", "span": self.spans[number].name, "count": count})
        return objects


class Counters:
    """A kernel per-CPU array of running totals, reported as the change
    since the last report (never cleared, so no hit is lost between read
    and clear)."""

    def __init__(self, table, size):
        self.table = table
        self.last = [0] * size

    def take(self):
        now = [self.table.sum(self.table.Key(n)).value for n in range(len(self.last))]
        changes = {n: now[n] - self.last[n] for n in range(len(now))}
        self.last = now
        return changes


def format_counts(probes, counts):
    width = max([len("PROBE")] + [len(p.name) for p in probes])
    lines = ["%-*s %10s" % (width, "PROBE", "COUNT")]
    lines += ["%-*s %10d" % (width, p.name, counts[p.number]) for p in probes if counts.get(p.number)]
    return "\n".join(lines)


def hit_line(tool, data, as_json):
    probe = tool.probes[ct.cast(data, ct.POINTER(HitHeader)).contents.id]
    event = ct.cast(data, ct.POINTER(probe.event)).contents
    if as_json:
        args = {f.label: f.json(getattr(event, f.member)) for f in probe.fields}
        return json.dumps({"type": "hit", "probe": probe.name, "ts_ns": event.ts, "args": args})
    parts = ["%d.%06d: %s" % (event.ts // 1000000000, event.ts % 1000000000 // 1000, probe.name)]
    parts += ["%s=%s" % (f.label, f.show(getattr(event, f.member))) for f in probe.fields]
    return " ".join(parts)


def listing(tool):
    lines = ["probes (GROUP PROBE: doc):"]
    lines += ["  %s %s: %s" % (p.group, p.name, p.doc) for p in tool.probes]
    if tool.spans:
        lines.append("spans (--hist):")
        for s in tool.spans:
            key = ", ".join(f.label for f in s.keys) or "thread"
            by = "; by " + ", ".join(f.label for f in s.by) if s.by else ""
            lines.append("  %s: %s -> %s, key %s%s: %s" % (s.name, s.start, s.end, key, by, s.doc))
    return "\n".join(lines)


# --- enum names from debug info ------------------------------------------

def printed_enums(probes, spans):
    """The enums the selected probes' lines (or spans' histograms) print."""
    fields = [f for s in spans for f in s.key_fields + s.by] if spans else [f for p in probes for f in p.fields]
    return list(dict.fromkeys(f.enum for f in fields if f.enum is not None))


def dwarf_enums(path, wanted):
    """{enum: ((enumerator, value), ...)} of the ``wanted`` enums defined at
    the top of the file's compile units, reading units only until all are
    found; None if the file has no DWARF. ImportError without pyelftools."""
    from elftools.elf.elffile import ELFFile

    wanted = {name.encode("utf-8", "surrogateescape"): name for name in wanted}
    found = {}
    with open_regular(path) as file, time_limit(DWARF_SECONDS):
        elf = ELFFile(file)
        if elf.get_section_by_name(".debug_info") is None and elf.get_section_by_name(".zdebug_info") is None:
            return None
        for unit in elf.get_dwarf_info().iter_CUs():
            for die in unit.get_top_DIE().iter_children():
                if die.tag != "DW_TAG_enumeration_type" or "DW_AT_declaration" in die.attributes:
                    continue
                name = die.attributes.get("DW_AT_name")
                enum = wanted.get(name.value) if name is not None else None
                if enum is None or enum in found:
                    continue
                found[enum] = tuple(
                    (text(child.attributes["DW_AT_name"].value), child.attributes["DW_AT_const_value"].value)
                    for child in die.iter_children() if child.tag == "DW_TAG_enumerator")
            if len(found) == len(wanted):
                break
    return found


# The traced process chose these files (a path it mapped may since name a
# FIFO or a device; its DWARF may be built to make a reader loop): the tool
# runs as root and must not wait on them.
DWARF_SECONDS = 30


def open_regular(path):
    """``path`` opened for reading if it is a regular file; never blocks."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError("not a regular file")
    return os.fdopen(fd, "rb")


@contextlib.contextmanager
def time_limit(seconds):
    def expired(signum, frame):
        raise TimeoutError("reading it took over %d s" % seconds)

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def shown_names(enumerators, strip):
    """value -> printed name, as the generator makes the catalog's: the
    prefix stripped, an alias keeping the first name."""
    names = {}
    for name, value in enumerators:
        names.setdefault(value, name[len(strip):] if strip and name.startswith(strip) and name != strip else name)
    return names


def traced_files(args, holders):
    """(shown name, path to open) of the files whose DWARF names the enums:
    the executable (-p) or BINARY, then the files holding the probes, each
    once."""
    files = []
    if args.pid is not None:
        exe = "/proc/%d/exe" % args.pid
        try:
            files.append((os.readlink(exe), exe))
        except OSError:
            files.append((exe, exe))
    if args.binary is not None:
        files.append((args.binary, args.binary))
    files += [(text(path), text(path)) for path in holders]
    unique, seen = [], set()
    for shown, path in files:
        try:
            info = os.stat(path)
            key = (info.st_dev, info.st_ino)
        except OSError:
            key = path
        if key not in seen:
            seen.add(key)
            unique.append((shown, path))
    return unique


def use_debug_info(tool, enums, files):
    """Each enum's names from the first file whose DWARF has it, put in
    the tool's tables; returns the stderr lines saying each one's source."""
    missing, reasons, by_file = list(enums), [], {}
    for shown, path in files:
        if not missing:
            break
        try:
            found = dwarf_enums(path, missing)
        except ImportError:
            reasons.append("pyelftools is not installed for %s (Debian: python3-pyelftools)" % sys.executable)
            break
        except Exception as exc:  # damaged or unreadable: the catalog's names still trace
            reasons.append("debug info of '%s' unusable: %s" % (shown, exc))
            continue
        if found is None:
            reasons.append("'%s' has no debug info" % shown)
            continue
        for enum, enumerators in found.items():
            names, _, strip = tool.enums[enum]
            names.clear()
            names.update(shown_names(enumerators, strip))
            missing.remove(enum)
            differs = " (differs from the catalog's)" if names != tool.catalog_names[enum] else ""
            by_file.setdefault(shown, []).append(enum + differs)
        if missing:
            reasons.append("not in the debug info of '%s'" % shown)
    lines = ["enum names from the debug info of '%s': %s" % (shown, ", ".join(done)) for shown, done in by_file.items()]
    why = "; ".join(reasons) or "no file to read"
    return lines + ["enum names of %s from the catalog (as the tool has them): %s" % (enum, why) for enum in missing]


# --- attaching -----------------------------------------------------------

class BccUsdt(ct.Structure):
    """libbcc's struct bcc_usdt (bcc_usdt.h of BCC 0.26); the binding's copy
    lacks the last member, the semaphore's offset in its file."""

    _fields_ = [
        ("provider", ct.c_char_p), ("name", ct.c_char_p), ("bin_path", ct.c_char_p),
        ("semaphore", ct.c_uint64), ("num_locations", ct.c_int), ("num_arguments", ct.c_int),
        ("semaphore_offset", ct.c_uint64),
    ]


class Libbcc:
    """The libbcc calls tools make with their C prototypes (libbpf.h and
    bcc_usdt.h of BCC 0.26), on a handle of their own so BCC's binding
    keeps its declarations."""

    def __init__(self, name="libbcc.so.0"):
        self.lib = lib = ct.CDLL(name, use_errno=True)
        self.attach_uprobe = lib.bpf_attach_uprobe
        # int bpf_attach_uprobe(int progfd, enum bpf_probe_attach_type, const char *ev_name,
        #                       const char *binary_path, uint64_t offset, pid_t pid, uint32_t ref_ctr_offset)
        self.attach_uprobe.argtypes = [ct.c_int, ct.c_int, ct.c_char_p, ct.c_char_p, ct.c_uint64, ct.c_int, ct.c_uint32]
        self.attach_uprobe.restype = ct.c_int
        self.close_perf_event_fd = lib.bpf_close_perf_event_fd
        self.close_perf_event_fd.argtypes = [ct.c_int]
        self.close_perf_event_fd.restype = ct.c_int
        self.usdt_foreach = lib.bcc_usdt_foreach
        self.callback = ct.CFUNCTYPE(None, ct.POINTER(BccUsdt))
        self.usdt_foreach.argtypes = [ct.c_void_p, self.callback]
        self.usdt_foreach.restype = None

    def semaphore_offsets(self, context):
        """(binary path, provider, probe) -> the semaphore's file offset, 0 without one."""
        found = {}

        def note(usdt):
            probe = usdt.contents
            found[(probe.bin_path, probe.provider, probe.name)] = probe.semaphore_offset if probe.semaphore else 0

        self.usdt_foreach(context, self.callback(note))
        return found


class AttachError(Exception):
    pass


def attach(bpf, usdt, provider, names, libbcc):
    """Attach every enabled location of the probes; returns the perf event
    fds. names: fn_name -> probe name."""
    from bcc import BPF

    offsets = libbcc.semaphore_offsets(usdt.get_context())
    fds = []
    for binary, fn_name, address, pid in usdt.enumerate_active_probes():
        name = names[fn_name.decode()]
        ref_ctr_offset = offsets.get((binary, provider.encode(), name.encode()), 0)
        function = bpf.load_func(fn_name, BPF.KPROBE)
        # Only a fallback through tracefs uses the name; unique per location and tool.
        ev_name = b"probegen_%d_%x_%d" % (os.getpid(), address, len(fds))
        fd = libbcc.attach_uprobe(function.fd, 0, ev_name, binary, address, pid, ref_ctr_offset)
        if fd < 0:
            for done in fds:
                libbcc.close_perf_event_fd(done)
            raise AttachError("cannot attach probe %s at %s:0x%x (semaphore offset 0x%x): %s"
                              % (name, text(binary), address, ref_ctr_offset, os.strerror(ct.get_errno() or -fd)))
        fds.append(fd)
    return fds


def fail(message):
    print("%s: error: %s" % (os.path.basename(sys.argv[0]), message), file=sys.stderr)
    return 2


class Stop:
    """Set by Ctrl-C and SIGTERM; the loop ends at its next turn (an
    exception raised inside BCC's ctypes callback would be swallowed)."""

    def __init__(self):
        self.requested = False
        signal.signal(signal.SIGINT, self.handler)
        signal.signal(signal.SIGTERM, self.handler)

    def handler(self, signum, frame):
        self.requested = True


class Target:
    """The traced process, to stop when it exits (its pidfd turns readable,
    zombie or not); without -p there is none."""

    def __init__(self, pid):
        self.fd = None
        if pid is not None and hasattr(os, "pidfd_open"):
            try:
                self.fd = os.pidfd_open(pid)
            except OSError:
                self.fd = None

    def exited(self):
        return self.fd is not None and bool(select.select([self.fd], [], [], 0)[0])


# --- the run -------------------------------------------------------------

def main(tool, argv=None):
    # Piped into head: end quietly, as a command line tool does.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = parse_args(tool, argv)
    if args.list:
        print(listing(tool))
        return 0
    probes, spans = selection(tool, args)
    program = program_text(tool, args, spans)
    if not probes:
        return fail("no probe selected")
    if args.ebpf and args.pid is None and args.binary is None:
        print(program)
        return 0
    try:
        from bcc import BPF, USDT
    except ImportError:
        return fail("cannot import bcc: install python3-bpfcc and run with /usr/bin/python3")
    where = args.binary or "pid %d" % args.pid
    try:
        usdt = USDT(pid=args.pid, path=args.binary)
    except Exception as exc:  # BCC raises plain Exception for a bad pid or path
        return fail("cannot read the probes of %s: %s" % (where, exc))
    names = {}
    for probe in probes:
        fn_name = "probe_%d" % probe.number
        try:
            usdt.enable_probe(probe="%s:%s" % (tool.provider, probe.name), fn_name=fn_name)
            names[fn_name] = probe.name
        except Exception:
            print("warning: probe %s not found in %s; not traced" % (probe.name, where), file=sys.stderr)
    if not names and args.pid is None:
        return fail("no probe could be enabled in %s: probes with semaphores (as the generated header "
                    "makes them) are enabled only in a running process: give -p PID" % args.binary)
    if not names:
        return fail("none of the probes was found in %s" % where)
    program = usdt.get_text() + program  # BCC's argument readers first
    if args.ebpf:
        print(program)
        return 0
    enums = [] if args.count else printed_enums(probes, spans)
    if args.no_debug_info:
        sources = ["enum names of %s from the catalog (as the tool has them): --no-debug-info" % e for e in enums]
    else:
        sources = use_debug_info(tool, enums, traced_files(args, {b for b, _, _, _ in usdt.enumerate_active_probes()}))
    for line in sources:
        print("%s: %s" % (os.path.basename(sys.argv[0]), line), file=sys.stderr)
    stop = Stop()  # from here, Ctrl-C ends the tool at its next turn, not inside BCC
    try:
        bpf = BPF(text=program)
    except Exception as exc:
        return fail("cannot load the BPF program (root needed): %s" % exc)
    libbcc = Libbcc()
    try:
        fds = attach(bpf, usdt, tool.provider, names, libbcc)
    except AttachError as exc:
        return fail(str(exc))
    try:
        return run(tool, args, bpf, [p for p in probes if "probe_%d" % p.number in names], spans, stop)
    finally:
        for fd in fds:
            libbcc.close_perf_event_fd(fd)


def run(tool, args, bpf, probes, spans, stop):
    """Collect until Ctrl-C, SIGTERM, --duration or the traced process's
    exit; print the summaries (each --interval and at the end)."""
    sys.stdout.reconfigure(line_buffering=True, errors="surrogateescape")
    emit = (lambda obj: print(json.dumps(obj))) if args.json else None
    histograms = Histograms(spans, args.per_key, args.milliseconds) if args.hist else None
    counts = Counters(bpf["counts"], len(tool.probes)) if args.count else None
    unmatched = Counters(bpf["unmatched"], len(tool.spans)) if args.hist else None

    def lost(count):
        print("warning: lost %d events" % count, file=sys.stderr)

    if histograms:
        bpf["span_events"].open_perf_buffer(lambda cpu, data, size: histograms.add(data), page_cnt=64, lost_cb=lost)
    elif not counts:
        bpf["events"].open_perf_buffer(lambda cpu, data, size: print(hit_line(tool, data, args.json)),
                                       page_cnt=64, lost_cb=lost)

    def summary():
        if counts:
            taken = counts.take()
            if emit:
                for probe in probes:
                    if taken[probe.number]:
                        emit({"type": "hits", "probe": probe.name, "count": taken[probe.number]})
            else:
                print(format_counts(probes, taken))
        elif histograms:
            taken = histograms.take()
            ends = {k: v for k, v in unmatched.take().items() if k in histograms.spans}
            if emit:
                for obj in histograms.json(taken, ends):
                    emit(obj)
            else:
                print(histograms.text(taken, ends).lstrip("\n"))

    def interval_begins():
        stamp = time.strftime("%H:%M:%S")
        if emit:
            emit({"type": "interval", "time": stamp})
        else:
            print("[%s]" % stamp)

    target = Target(args.pid)
    mode = ("counting hits" if counts else "%d span%s as histograms" % (len(spans), "s" * (len(spans) != 1))
            if histograms else "a line per hit")
    if emit:
        emit({"type": "attached", "probes": len(probes)})
    else:
        print("Tracing %d probe%s (%s): %s. Hit Ctrl-C to end."
              % (len(probes), "s" * (len(probes) != 1), tool.provider, mode))
    now = time.monotonic()
    deadline = None if args.duration is None else now + args.duration
    next_summary = None if args.interval is None else now + args.interval
    while not stop.requested and not target.exited():
        if counts:
            time.sleep(POLL_MS / 1000)
        else:
            bpf.perf_buffer_poll(timeout=POLL_MS)
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            break
        if next_summary is not None and now >= next_summary:
            interval_begins()
            summary()
            next_summary += args.interval
    if not counts:
        bpf.perf_buffer_poll(timeout=0)  # what arrived before the stop
    if args.interval is not None:
        interval_begins()
    summary()
    detach(bpf)
    return 0


def detach(bpf):
    """BCC's atexit cleanup, now and without its traceback if it fails."""
    import atexit

    atexit.unregister(bpf.cleanup)
    try:
        bpf.cleanup()
    except Exception as exc:
        print("warning: %s (the probes detach when this process exits)" % exc, file=sys.stderr)
