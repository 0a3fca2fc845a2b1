"""Run bpftrace scripts against a live process.

Replaces __EXE__ in each usdt probe with the file that holds that probe for
the process (its executable or a mapped shared library), quoted so that no
byte of a name the process chose can change the program, and __PID__ with
the pid, then runs bpftrace -p PID on the result. A file bpftrace 0.17
cannot name exactly (':', '*' or a newline in its name) is refused, exit 2.
Ctrl-C or SIGTERM ends tracing cleanly. See probegen/runtime/trace.py.
"""

from __future__ import annotations

HELP = "run bpftrace scripts (with __EXE__/__PID__ markers) against a process"


def configure(parser):
    parser.add_argument("pid", type=int, metavar="PID", help="process to trace")
    parser.add_argument("scripts", nargs="+", metavar="SCRIPT", help="bpftrace scripts, e.g. scripts/bpf/nvmf.bt")
    parser.add_argument("-o", "--output", metavar="FILE", help="bpftrace writes its output to FILE")
    parser.add_argument("--dry-run", action="store_true", help="print the program bpftrace would run, and exit")


def run(args) -> int:
    import sys

    from probegen.runtime import trace

    if args.dry_run:
        sys.stdout.write(trace.program_for(args.pid, args.scripts))
        return 0
    return trace.run(args.pid, args.scripts, args.output)
