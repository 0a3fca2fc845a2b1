"""Command line: run one command module of probegen.commands (only that one is imported, so fast
commands start fast), and turn an InputError into its line.
"""

import argparse
import errno
import gc
import importlib
import os
import sys

from probegen import __version__
from probegen.errors import CommandError, InputError, printable_lines

# The commands, in the order of --help; each is probegen.commands.NAME (import: import_catalog).
COMMANDS = {name: f"probegen.commands.{'import_catalog' if name == 'import' else name}" for name in (
    "header", "generate", "check", "bcc", "bpftrace", "trace", "lint", "structs", "list", "verify", "import", "docs",
    "dtrace", "paths", "schema")}


def build_parser(command: str | None) -> argparse.ArgumentParser:
    """The parser; commands other than ``command`` (if given) get bare entries."""
    parser = argparse.ArgumentParser(
        prog="probegen",
        description="USDT probes from one YAML catalog: C header, bpftrace and BCC scripts, "
        "struct definitions from DWARF, and checks of built binaries.",
    )
    parser.add_argument("--version", action="version", version=f"probegen {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module_name in COMMANDS.items():
        if command is not None and name != command:
            sub.add_parser(name)
            continue
        module = importlib.import_module(module_name)
        subparser = sub.add_parser(name, help=module.HELP, description=module.__doc__,
                                   add_help=getattr(module, "ADD_HELP", True))
        if hasattr(module, "configure"):  # schema has no options; dtrace parses its own (main)
            module.configure(subparser)
        subparser.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        # Commands build many objects and few cycles: cyclic collection only costs time (500 -> 300 ms
        # for a 2,000-probe header); freezing at the end spares the one at shutdown (300 -> 240 ms).
        gc.disable()
        try:
            return _run(sys.argv[1:])
        finally:
            gc.freeze()
    return _run(argv)


def dtrace_main() -> int:
    """probegen-dtrace: SystemTap's dtrace command line (probegen dtrace)."""
    gc.disable()
    return _run(["dtrace", *sys.argv[1:]])


def _run(argv: list[str]) -> int:
    for name in ("stdout", "stderr"):  # closed (>&-): /dev/null takes its descriptor (no output file gets it)
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in COMMANDS:  # its errors begin with its name ('import' is shown bare)
        CommandError.program = "import" if command == "import" else f"probegen {command}"
    try:
        if argv[:1] == ["dtrace"]:  # dtrace's own options, which argparse would misread
            from probegen.commands import dtrace

            status = dtrace.main(argv[1:])
        else:
            args = build_parser(command if command in COMMANDS else None).parse_args(argv)
            status = args.run(args)
        sys.stdout.flush()  # output that cannot be written fails here, not after the exit code is chosen
        return status
    except InputError as exc:
        print(printable_lines(str(exc)), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # stdout on a full or failing device (files written are named by their own errors)
        if exc.filename is not None or exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO):
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is left unwritten goes nowhere
        print(CommandError(f"cannot write to stdout: {exc.strerror}"), file=sys.stderr)
        return 2
