"""Run bpftrace scripts against a live process.

A script probegen generated from the catalog is generated again for the
process: the probes it has (the others named on stderr), their arguments
as its notes pass them (a difference from the catalog is a warning), enum
names from its debug info, strings whole on the installed bpftrace. In
other scripts it replaces __EXE__ in each usdt probe with the file that holds that probe for
the process (its executable or a mapped shared library), quoted so that no
byte of a name the process chose can change the program, and __PID__ with
the pid, then runs bpftrace -p PID on the result. A file bpftrace 0.17
cannot name exactly (':', '*' or a newline in its name) is refused, exit 2.
Ctrl-C or SIGTERM ends tracing cleanly. See probegen/runtime/trace.py.

Summary modes need no script: --hist measures the catalog's spans, --count
counts hits, --json prints JSON lines.

Enum names of generated scripts come from the traced binary's debug info
when it has that enum, so a script made for one version prints another's
states by their own names; stderr says which source each enum's names came
from (--no-debug-info: the catalog's).
"""

import argparse
import contextlib

from probegen.errors import CommandError

HELP = "run bpftrace scripts (with __EXE__/__PID__ markers), or span histograms and hit counts, against a process"


def _seconds(text: str) -> int:
    with contextlib.suppress(ValueError):
        if int(text) >= 1:
            return int(text)
    raise argparse.ArgumentTypeError(f"expected a whole number of seconds, at least 1: {text!r}")


def configure(parser):
    from probegen.commands import add_options

    add = parser.add_argument
    add("-p", "--pid", type=int, metavar="PID", help="process to trace (or give PID first)")
    add("scripts", nargs="*", metavar="SCRIPT",
        help="[PID] then bpftrace scripts, e.g. scripts/bpf/probegen/nvmf.bt (or use --hist / --count)")
    add("-o", "--output", metavar="FILE", help="bpftrace writes its output to FILE")
    add("--dry-run", action="store_true", help="print the program bpftrace would run, and exit")
    add("--hist", nargs="?", const="", metavar="SPAN,...",
        help="latency histograms (microseconds) of the catalog's spans: these, or every span "
             "whose probes the process has")
    add("--count", nargs="?", const="", metavar="PROBE,...",
        help="count hits of these probes, or of every catalog probe the process has")
    add("--json", action="store_true", help="print JSON lines (histograms, counts, ...) instead of bpftrace's text")
    add("--interval", type=_seconds, metavar="SECONDS", help="with --hist/--count: print (and reset) every SECONDS")
    add("--duration", type=_seconds, metavar="SECONDS", help="stop SECONDS after attaching, printing what was gathered")
    add("--timeline", metavar="FILE",
        help="also write the hits and spans as Chrome trace-event JSON (Perfetto UI, chrome://tracing)")
    add("--no-debug-info", action="store_true",
        help="print enum names as the catalog has them, not from the traced binary's DWARF")
    add_options(parser, "catalog")


def _take_pid(args) -> None:
    """PID from -p, else the first positional (``trace PID SCRIPT``), else
    the value --count or --hist took when written just before it: no probe
    or span name is a number."""
    if args.pid is None and args.scripts and args.scripts[0].isdigit():
        args.pid = int(args.scripts.pop(0))
    for option in ("count", "hist"):
        value = getattr(args, option)
        if args.pid is None and value and value.isdigit():
            args.pid = int(value)
            setattr(args, option, "")
    if args.pid is None:
        raise CommandError("which process? give -p PID")


def run(args) -> int:
    from pathlib import Path

    from probegen.catalog import load_catalog
    from probegen.files.unprivileged import deadline_in
    from probegen.runtime import trace

    _take_pid(args)
    summary = args.hist is not None or args.count is not None
    for wrong, message in (
            (summary and args.scripts, "give scripts or --hist/--count, not both "
                                       "(bpftrace allows one BEGIN and END per program)"),
            (not summary and not args.scripts, "nothing to trace: give bpftrace scripts, --hist or --count"),
            (args.timeline is not None and (args.json or summary),
             "--timeline needs every hit's line: scripts, without --json"),
            (args.interval is not None and not summary, "--interval applies to --hist and --count")):
        if wrong:
            raise CommandError(message)
    deadline = deadline_in(trace.STARTUP_SECONDS)  # one time limit for every file read at start-up
    if summary:
        trace.check_process(args.pid)
    # The catalog names the enums of generated scripts, and the maps of the span script.
    catalog = load_catalog(args.catalog) if summary or Path(args.catalog).exists() else None
    texts = [trace.summary_script(catalog, args.pid, args.hist, args.count, args.interval, deadline)] if summary else []
    common = dict(scripts=texts, duration=args.duration, catalog=catalog, debug_info=not args.no_debug_info,
                  deadline=deadline)
    if args.dry_run:
        print(trace.program_for(args.pid, args.scripts, **common), end="")
        return 0
    if args.timeline is not None:
        return trace.with_timeline(args.timeline, args.pid, args.scripts, args.output, **common)
    return trace.run(args.pid, args.scripts, args.output, as_json=args.json, **common)
