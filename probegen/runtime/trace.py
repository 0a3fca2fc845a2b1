"""bpftrace on a live process: generated scripts made again for it (runtime/fit.py),
the markers of every script (``__EXE__``, ``usdt:*:NAME``, ``__PID__``) naming the
files holding its probes; hits printed in parts joined, in time order, and with --timeline
read back from the lines. Its summary modes run programs made from the catalog (``--hist``:
span latency histograms, ``--count``: hits per probe), and ``--json`` reads bpftrace's ``-f json``
back into the JSON lines doc/tracing.md describes. The process is not trusted (doc/security.md)."""

import contextlib
import functools
import json
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

from probegen.bpftrace import LEXEME, SPECIAL_PROBE, attach_string, holds_big_strings
from probegen.errors import CommandError, InputError, Location
from probegen.files.inputs import read_input
from probegen.files.output import open_stream
from probegen.generators.escape import printf_literal
from probegen.generators.lines import CONTINUED
from probegen.runtime.bcc import Reorder, trace_events

_STRLEN = re.compile(r"BPFTRACE_STRLEN=(\d+)")
# address perms offset dev inode path; a path is what follows the spaces (not one deleted since it was mapped).
_MAPS_LINE = re.compile(rb"([0-9a-f]+-[0-9a-f]+) \S+ [0-9a-f]+ [0-9a-f]+:[0-9a-f]+ \d+ +(/.*)(?<! \(deleted\))")
# /proc/PID/maps: a line per mapping (65,530 by default); more is no process worth tracing.
MAPS_LIMIT = 64 << 20
# Bytes bpftrace 0.17 cannot take in a file name it must match exactly.
_UNNAMEABLE = {b":": "':' (bpftrace splits probe names at colons)",
               b"*": "'*' (a wildcard to bpftrace)",
               b"\n": "a newline"}
STARTUP_SECONDS = 30  # for all a start-up reads from the process's files (notes, enum names)
# Bounds of a probe's sites and arguments the child may report (sdt.h passes at most 12).
_MOST_SITES, _MOST_ARGS = 4096, 12

# A hit's line: ``SECONDS.MICROSECONDS: PROBE [tid TID] name=value ...``; one too long for
# a printf prints in parts, ``[tid TID K/N]`` (1/N, then +TEXT continuing it; others between).
HIT = re.compile(r"(?P<head>(?P<seconds>\d+)\.(?P<micros>\d{6}): (?P<probe>\S+))"
                 r"(?: \[tid (?P<tid>\d+)(?: (?P<part>\d+)/(?P<parts>\d+))?\])?(?P<rest>.*)")
STAMP = re.compile(r"(\d+)\.(\d{6}): ")  # bpftrace's nsecs (CLOCK_MONOTONIC)

Script = NamedTuple("Script", [("path", str), ("text", str)])
# A file the process maps: its name as /proc/PID/maps shows it (what bpftrace looks up)
# and its START-END, its entry in /proc/PID/map_files.
MappedFile = NamedTuple("MappedFile", [("name", bytes), ("addresses", str)])
# One argument of one probe site as its note has it (constant: an integer literal passed, else None).
NoteFacts = NamedTuple("NoteFacts", [("size", int), ("signed", bool), ("floating", bool), ("constant", int | None)])


def read_scripts(paths) -> list[Script]:
    scripts = []
    for path in paths:
        data = read_input(path, "script")  # regular files and pipes, bounded: never a device or a writerless FIFO
        try:
            scripts.append(Script(str(path), data.decode("utf-8")))
        except UnicodeDecodeError as exc:
            raise InputError(f"cannot read: {exc}", Location(str(path))) from None
    return scripts


def shown(name: bytes) -> str:
    """A file name the traced process chose, for a message: all but printable ASCII escaped."""
    return repr(bytes(name))[1:]


def _proc(pid: int, *parts: str) -> Path:
    return Path("/proc", str(pid), *parts)


def check_process(pid: int) -> None:
    if pid <= 0 or not _proc(pid).is_dir():
        raise CommandError(f"no process with pid {pid}")


def executable(pid: int) -> bytes:
    try:
        return os.readlink(bytes(_proc(pid, "exe")))
    except FileNotFoundError:
        raise CommandError(f"no process with pid {pid} (or it has no executable)") from None
    except PermissionError:
        raise CommandError(f"cannot see the executable of pid {pid}: permission denied (run as root)") from None


def mapped_files(pid: int) -> list[MappedFile]:
    """The executable, then every other file mapped, each once, in the order of
    /proc/PID/maps (split at newlines only: the kernel escapes those in names)."""
    exe = executable(pid)
    try:
        with open(_proc(pid, "maps"), "rb") as maps:
            data = maps.read(MAPS_LIMIT + 1)
    except FileNotFoundError:
        raise CommandError(f"no process with pid {pid}") from None
    except OSError as exc:  # the process exited while being read (maps takes the access check exe just passed)
        raise CommandError(f"cannot read /proc/{pid}/maps: {exc.strerror}") from None
    if len(data) > MAPS_LIMIT:
        raise CommandError(f"/proc/{pid}/maps is larger than {MAPS_LIMIT >> 20} MiB: "
                         "refusing a process with that many mappings")
    files: dict[bytes, MappedFile] = {}
    for match in filter(None, map(_MAPS_LINE.fullmatch, data.split(b"\n"))):
        files.setdefault(match[2], MappedFile(match[2], match[1].decode()))
    return sorted(files.values(), key=lambda f: f.name != exe)  # stable: the executable first


@contextlib.contextmanager
def opened(pid: int, files):
    """(file, /proc/self/fd/N) of each of ``files`` (once) that is a regular file, for a child without
    root; each is looked at through an O_PATH descriptor first (opening a device could act on it)."""
    with contextlib.ExitStack() as descriptors:
        found = []
        for mapped in dict.fromkeys(files):
            with contextlib.suppress(OSError):  # unmapped since maps was read
                try:  # the very file mapped
                    path = os.open(_proc(pid, "map_files", mapped.addresses), os.O_PATH | os.O_CLOEXEC)
                except PermissionError:  # map_files is root's: a dry run without root opens the name in its root
                    path = os.open(bytes(_proc(pid, "root")) + mapped.name, os.O_PATH | os.O_CLOEXEC)
                try:
                    if stat.S_ISREG(os.fstat(path).st_mode):
                        fd = os.open(f"/proc/self/fd/{path}", os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
                        descriptors.callback(os.close, fd)
                        found.append((mapped, f"/proc/self/fd/{fd}"))
                finally:
                    os.close(path)
        yield found


def probe_holders(pid: int, wanted, deadline: float | None = None) -> dict[tuple[str | None, str], tuple]:
    """For each (provider or None, name) in ``wanted``, (the first mapped file holding it, its
    sites: tuples of NoteFacts), parsed in a child without root."""
    from probegen.files.unprivileged import deadline_in, run_unprivileged

    with opened(pid, mapped_files(pid)) as files:
        found = run_unprivileged(_holders_in, [path for _, path in files], list(wanted),
                                 deadline=deadline or deadline_in(STARTUP_SECONDS),
                                 what=f"reading the probe notes of process {pid}'s files",
                                 modules=("elftools", "probegen.elf"))
    holders: dict[tuple[str | None, str], tuple] = {}
    for item in found if isinstance(found, list) else ():  # the child's answer is checked, not trusted
        with contextlib.suppress(TypeError, ValueError):  # not four items, or not hashable
            index, provider, name, sites = item
            if type(index) is int and 0 <= index < len(files) and (provider, name) in wanted and _sites_ok(sites):
                sites = [tuple(NoteFacts(*arg) for arg in site) for site in sites]
                holders.setdefault((provider, name), (files[index][0], sites))
    return holders


def _sites_ok(sites) -> bool:
    return (isinstance(sites, list) and 0 < len(sites) <= _MOST_SITES
            and all(isinstance(site, list) and len(site) <= _MOST_ARGS
                    and all(isinstance(arg, list) and len(arg) == 4 and arg[0] in (1, 2, 4, 8)
                            and type(arg[1]) is bool and type(arg[2]) is bool
                            and (arg[3] is None or (type(arg[3]) is int and -(1 << 63) <= arg[3] < 1 << 64))
                            for arg in site)
                    for site in sites))


def _holders_in(paths: list[str], wanted: list) -> list[list]:
    """In the child: [file index, provider or None, name, sites] for the first file
    holding each wanted probe; a site: a NoteFacts per argument, as lists."""
    from probegen.elf.notes import ElfError, read_binary

    missing = {tuple(key) for key in wanted}
    found = []
    for index, path in enumerate(paths):
        if not missing:
            break
        try:
            probes = read_binary(path).probes
        except ElfError:
            continue  # not an ELF file (locale archive, data file)
        for probe in reversed(probes):  # a name without its provider: the file's last probe of that name
            for key in {(probe.provider, probe.name), (None, probe.name)} & missing:
                missing.discard(key)
                sites = [[[arg.size, arg.signed, arg.floating, _literal(arg)] for arg in site.args]
                         for site in probe.sites]
                found.append([index, *key, sites])
    return found


def _literal(arg) -> int | None:
    """The integer literal a note argument passes ('-4@$0'), else None."""
    value = arg.operand.value if arg.operand.kind == "constant" else None
    return value if type(value) is int and -(1 << 63) <= value < 1 << 64 else None


def attach_target(pid: int, mapped: MappedFile, what: str) -> str:
    """The quoted target naming ``mapped`` for bpftrace -p PID (which matches /proc/PID/root
    and the name in /proc/PID/maps); InputError if bpftrace 0.17 cannot name it exactly."""
    try:  # the name as the kernel holds it (root only)
        real = os.readlink(bytes(_proc(pid, "map_files", mapped.addresses)))
    except OSError:
        real = mapped.name
    why = next((why for name in (real, mapped.name) for byte, why in _UNNAMEABLE.items() if byte in name), None)
    if why is not None:
        raise CommandError(f"{what} of process {pid} is in {shown(real)}, a file "
                         f"whose name holds {why}: bpftrace 0.17 cannot attach to it exactly; not tracing")
    if real != mapped.name:
        raise CommandError(f"{what} of process {pid} is in {shown(real)}, which /proc/{pid}/maps names "
                           f"{shown(mapped.name)}: bpftrace 0.17 cannot attach to it exactly; not tracing")
    return attach_string(bytes(_proc(pid, "root")) + mapped.name)


def wanted_probes(script: Script) -> set[tuple[str | None, str]]:
    """The usdt markers of a script that stand in code."""
    return {(m["provider"], m["name"]) for m in LEXEME.finditer(script.text) if m["usdt"]}


def _named(key: tuple[str | None, str]) -> str:
    return f"{key[0]}:{key[1]}" if key[0] else key[1]


def resolve(script: Script, pid: int, holders: dict, exe_target) -> str:
    """The script with its markers replaced for this process, in one pass (nothing
    substituted is scanned again). ``exe_target()``: the executable's target."""
    missing = sorted({_named(key) for key in wanted_probes(script) if key not in holders})
    if missing:
        raise InputError(f"process {pid} ({shown(executable(pid))}) has no probe {', '.join(missing)} "
                         "in its executable or mapped files", Location(script.path))

    def replace(match: re.Match) -> str:
        if not (match["usdt"] or match["exe"]):  # a comment, a string or __PID__: digits are inert anywhere
            return match[0].replace("__PID__", str(pid))
        key = (match["provider"], match["name"])
        target = attach_target(pid, holders[key][0], f"probe {_named(key)}") if match["usdt"] else exe_target()
        return match[0].replace(match["usdt"] or match["exe"], target, 1)  # the marker is the first of its kind

    return LEXEME.sub(replace, script.text)


def combine(scripts: list[Script], texts: list[str], wanted) -> str:
    """One bpftrace program from several scripts (shebang lines dropped; BEGIN and END counted in the
    scripts as written); if none has a BEGIN, one saying the ``wanted`` USDT probes are attached (it runs then)."""
    having = {keyword: [s.path for s in scripts if keyword in SPECIAL_PROBE.findall(s.text)]
              for keyword in ("BEGIN", "END")}
    for keyword, paths in having.items():
        if len(paths) > 1:
            raise CommandError(f"{' and '.join(paths)} each have a {keyword} block, and bpftrace "
                               "allows one per program: trace them in separate runs (all.bt holds every probe)")
    program = "\n".join(text.partition("\n")[2] if text.startswith("#!") else text for text in texts)
    if having["BEGIN"]:
        return program
    names = ", ".join(Path(s.path).stem for s in scripts)
    probes = f"{len(wanted)} probe{'s' if len(wanted) != 1 else ''} " if wanted else ""  # USDT probes only
    text = f"Tracing {probes}({names}). Hit Ctrl-C to end."
    return program + f'\nBEGIN\n{{\n\tprintf("{printf_literal(text)}\\n");\n}}\n'


def _executable_target(pid: int) -> str:
    exe, files = executable(pid), mapped_files(pid)
    if not files or files[0].name != exe:
        raise CommandError(f"process {pid} does not map its executable {shown(exe)} "
                           f"under that name in /proc/{pid}/maps: cannot name it to bpftrace")
    return attach_target(pid, files[0], "the executable")


def strlen(text: str) -> int | None:
    """BPFTRACE_STRLEN the scripts as written (not substituted) ask for, if any."""
    return max((int(v) for v in _STRLEN.findall(text)), default=None)


def program_for(pid: int, paths=(), *, scripts=(), big_strings: bool | None = None, **options) -> str:
    """The program `probegen trace` would run for the scripts at ``paths`` and given
    as text, for a bpftrace holding big strings or not (None: as on PATH)."""
    if big_strings is None:
        path = shutil.which("bpftrace")
        big_strings = holds_big_strings(path) if path else False
    check_process(pid)
    return _program(pid, read_scripts(paths) + list(scripts), big=big_strings, **options)[0]


def _program(pid: int, scripts: list[Script], duration: int | None = None, catalog=None, debug_info: bool = True,
             big: bool = False, tids: bool = False, deadline: float | None = None) -> tuple[str, int, dict]:
    """(the program, the USDT probes it attaches, the labels of each line made again for the
    process). ``big``: bpftrace holds big strings; ``tids``: those lines name their thread too."""
    from probegen.files.unprivileged import deadline_in
    from probegen.runtime import fit

    deadline = deadline or deadline_in(STARTUP_SECONDS)
    groups = {n: g for n, s in enumerate(scripts) if (g := fit.generated_group(s, catalog))}
    wanted = set().union(*map(wanted_probes, scripts))
    holders = probe_holders(pid, wanted, deadline) if wanted else {}
    scripts, fitted = fit.regenerate(pid, scripts, groups, catalog, debug_info, big, holders, deadline, tids)
    wanted = set().union(*map(wanted_probes, scripts))  # those of the scripts made again
    if groups and not wanted:
        raise CommandError(f"process {pid} ({shown(executable(pid))}) has none of the scripts' probes")
    exe_target = functools.cache(lambda: _executable_target(pid))
    program = combine(scripts, [resolve(s, pid, holders, exe_target) for s in scripts], wanted)
    if duration is not None:
        # Timed from the attach (bpftrace starts intervals after BEGIN),
        # and ended by exit(): the maps print as on Ctrl-C.
        program += f"\ninterval:s:{int(duration)}\n{{\n\texit();\n}}\n"
    return program, len(wanted), fitted


def run(pid: int, paths=(), output: str | None = None, *, scripts=(), as_json: bool = False, tap=None,
        labels: dict | None = None, **options) -> int:
    """Trace until bpftrace ends (Ctrl-C, SIGTERM, --duration, the process's exit): its exit status.
    ``as_json``: JSON lines (JsonLines); ``tap``: sees the lines; ``labels``: updated with
    those of the lines made again for the process, which then name their thread for ``tap``."""
    if os.geteuid() != 0:
        raise CommandError("bpftrace needs root: run as root (e.g. with sudo)")
    bpftrace = shutil.which("bpftrace")
    if bpftrace is None:
        raise CommandError("bpftrace not found on PATH (install the bpftrace package)")
    check_process(pid)
    scripts = read_scripts(paths) + list(scripts)
    program, attached, fitted = _program(pid, scripts, big=holds_big_strings(bpftrace), tids=labels is not None,
                                         **options)
    if labels is not None:
        labels.update(fitted)
    wanted = strlen("\n".join(s.text for s in scripts))  # unless the environment sets one
    env = {"BPFTRACE_STRLEN": str(wanted), **os.environ} if wanted else None
    # The output: opened here under output's checks (bpftrace would follow a link).
    # The program: 0600 and O_EXCL under a random name, so nobody can swap it.
    sys.stdout.flush()
    out = open(sys.stdout.fileno() if output is None else open_stream(output), "w", encoding="utf-8",
               errors="surrogateescape", closefd=output is not None)
    with out, tempfile.NamedTemporaryFile("w", prefix="probegen-", suffix=".bt", encoding="utf-8") as file:
        file.write(program)
        file.flush()
        argv = [bpftrace, "-p", str(pid), *(["-f", "json"] if as_json else []), file.name]
        child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE)
        if as_json:
            return _relay(child, out, JsonLines(options.get("catalog"), attached).convert, errors="replace")
        hits = Hits(tap, set(fitted) if labels is not None else ())
        return _relay(child, out, hits.feed, hits.finish, tick=True)


class HitJoiner:
    """Fed the tracer's lines, gives back the lines to show: a split hit as one
    line once its last part arrives; ``finish``: parts never completed, as they came."""

    def __init__(self, keep_tid=()) -> None:
        self.keep_tid = keep_tid
        self._pending: dict[tuple[str, str], tuple[list[str], list[str], int]] = {}  # (head, tid) -> (lines, texts, N)

    def feed(self, line: str) -> list[str]:
        match = HIT.fullmatch(line)
        if match is None or match["part"] is None:
            return [line]
        key, part, parts, rest = (match["head"], match["tid"]), int(match["part"]), int(match["parts"]), match["rest"]
        stale = self._pending.pop(key, ([],))[0] if part == 1 else []
        if part == 1:
            head = match["head"] + f" [tid {match['tid']}]" * (match["probe"] in self.keep_tid)
            self._pending[key] = ([line], [head + rest], parts)
        else:
            lines, texts, expected = self._pending.get(key, ((), (), None))
            if part != len(lines) + 1 or parts != expected or not rest.startswith(CONTINUED):
                return [line]  # a part whose first line was lost: shown as it came
            lines.append(line)
            texts.append(rest[len(CONTINUED):])
        if len(self._pending[key][0]) < parts:
            return stale
        return stale + ["".join(self._pending.pop(key)[1])]

    def finish(self) -> list[str]:
        lines = [line for hit in self._pending.values() for line in hit[0]]
        self._pending.clear()
        return lines


class Hits:
    """bpftrace's lines as trace prints them: split hits joined, in timestamp order; ``tap``
    sees them first, with the thread the lines of probes in ``tids`` print, then taken off."""

    def __init__(self, tap, tids) -> None:
        self.joiner = HitJoiner(keep_tid=tids)
        self.ready: list[str] = []
        self.order = Reorder(lambda hit: self.ready.append(hit[1]))
        self.tap, self.tids = tap, tids

    def feed(self, line: str | None) -> list[str]:
        """Lines to print after ``line`` (None: none came, time passed)."""
        return self._take(self.joiner.feed(line) if line is not None else [], self.order.due)

    def finish(self) -> list[str]:
        return self._take(self.joiner.finish(), self.order.release)

    def _take(self, joined: list[str], release) -> list[str]:
        for line in joined:
            match = STAMP.match(line)
            if match is None:  # no hit (a banner, maps at exit): after every hit held
                self.order.release()
                self.ready.append(line)
            else:
                self.order.add(((int(match[1]) * 1000000 + int(match[2])) * 1000, line))
        release()
        lines, self.ready = self.ready, []
        if self.tap is not None:
            self.tap(lines)
        return [m["head"] + m["rest"] if m and m["tid"] and not m["part"] and m["probe"] in self.tids else line
                for line, m in zip(lines, map(HIT.match, lines))]


def _relay(child: subprocess.Popen, out, convert, finish=None, tick: bool = False,
           errors: str = "surrogateescape") -> int:
    """Copy the child's lines through ``convert`` to ``out``; ``tick``: ``convert(None)`` after a tenth
    of a second without any (held lines fall due); ``finish()``: lines held at the end. Ctrl-C and
    SIGTERM go to the child, which prints its maps and exits."""

    def forward(signum, _frame):
        if child.poll() is None:
            child.send_signal(signum)

    with _signals(forward):
        rest = b""
        while True:
            lines = [None]
            if select.select([child.stdout], [], [], 0.1 if tick else None)[0]:
                data = os.read(child.stdout.fileno(), 1 << 16)
                if not data:
                    break
                *raw, rest = (rest + data).split(b"\n")
                lines = [line.decode("utf-8", errors) for line in raw]
            out.writelines(f"{converted}\n" for line in lines for converted in convert(line))
            out.flush()
        held = [*convert(rest.decode("utf-8", errors))] if rest else []
        out.writelines(f"{line}\n" for line in held + (finish() if finish else []))
        return child.wait()


@contextlib.contextmanager
def _signals(handler):
    """SIGINT and SIGTERM handled by ``handler`` within."""
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, before in previous.items():
            signal.signal(s, before)


def _hit(line: str, labels: dict) -> tuple | None:
    """(ns, tid or None, probe, {label: value}) of a line ``SECONDS.MICROS: PROBE
    [tid TID] label=value ...`` of a probe in ``labels`` (probe -> its labels; {} if the line has
    others); None for any other line, and for a part of a split hit never completed."""
    match = HIT.fullmatch(line)
    if match is None or match["part"] is not None or match["probe"] not in labels:
        return None
    names = labels[match["probe"]]
    values = _fields(tuple(names)).fullmatch(match["rest"])
    args = {label: int(value) if value.lstrip("-").isdigit() else value
            for label, value in zip(names, values.groups() if values else ())}
    tid, ns = match["tid"], (int(match["seconds"]) * 1000000 + int(match["micros"])) * 1000
    return ns, int(tid) if tid else None, match["probe"], args


@functools.cache
def _fields(labels: tuple[str, ...]) -> re.Pattern:
    """`` label=value`` for each of ``labels`` in their order, the line's only order: a value (strings
    hold spaces) runs to the first `` next=`` after it, never a later one (atomic: a line with other
    labels fails in linear time; an earlier stop only leaves more line to the ones after)."""
    spelled = [f" {re.escape(label)}=" for label in labels]
    return re.compile(spelled[0] + "".join(f"(?>(.*?){s})" for s in spelled[1:]) + "(.*)" if labels else "")


def with_timeline(path, pid, paths, output, *, catalog, **options) -> int:
    """``trace --timeline``: run, then the hits of the lines it printed written to ``path`` as
    trace-event JSON, read by the labels of the catalog's lines or of those made again for the
    process. Spans are matched by thread too when every hit named its thread."""
    from probegen.generators.lines import probe_line

    if catalog is None:
        raise CommandError("--timeline needs the catalog (--catalog) to read the hits")
    labels = {p.name: [f.label for f in probe_line(catalog, p).fields] for p in catalog.probes}
    lines: list[str] = []
    status = run(pid, paths, output, tap=lines.extend, labels=labels, catalog=catalog, **options)
    hits = [hit for hit in (_hit(line, labels) for line in lines) if hit is not None]
    threads = all(tid is not None for _, tid, _, _ in hits)
    spans = [(s.name, s.start.name, s.end.name, [(k.start.name, k.end.name) for k in s.key])
             for s in catalog.spans if s.key or threads]
    text = json.dumps(trace_events([(ns, tid or pid, p, a) for ns, tid, p, a in hits], spans, pid))
    with _signals(signal.SIG_IGN), os.fdopen(open_stream(path), "w", encoding="utf-8") as file:
        file.write(text)  # the trace has ended: a Ctrl-C now would only cut the file short
    return status


def _pick(wanted: str | None, known: dict, what: str, catalog) -> list | None:
    """The named entries of ``known`` ([] when not asked), None for every one (no name given)."""
    names = [n for n in (part.strip() for part in (wanted or "").split(",")) if n]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise CommandError(f"{catalog.path.name} has no {what} {', '.join(unknown)} "
                           f"(its {what}s: {', '.join(known) or 'none'})")
    return None if wanted is not None and not names else [known[n] for n in dict.fromkeys(names)]


def summary_script(catalog, pid: int, hist: str | None, count: str | None,
                   interval: int | None = None, deadline: float | None = None) -> Script:
    """The program for --hist SPANS and --count PROBES (comma-separated; empty:
    every one the process has)."""
    from probegen.generators.spans import SPAN_SCRIPT, render_program

    spans = _pick(hist, {s.name: s for s in catalog.spans}, "span", catalog)
    counted = _pick(count, {p.name: p for p in catalog.probes}, "probe", catalog)
    if spans is None or counted is None:
        present = {name for _, name in probe_holders(pid, {(None, p.name) for p in catalog.probes}, deadline)}
    if spans is None:
        spans = [s for s in catalog.spans if s.start.name in present and s.end.name in present]
        if not spans:
            raise CommandError(f"process {pid} has the probes of none of {catalog.path.name}'s spans" if catalog.spans
                               else f"{catalog.path.name} declares no spans")
    if counted is None:
        counted = [p for p in catalog.probes if p.name in present]
        if not counted:
            raise CommandError(f"process {pid} has none of {catalog.path.name}'s probes")
    return Script(f"<{SPAN_SCRIPT} of {catalog.path.name}>", render_program(catalog, spans, counted, interval=interval))


class JsonLines:
    """Turns bpftrace -f json lines into probegen's JSON lines."""

    def __init__(self, catalog, attached: int | None = None):
        from probegen.generators.spans import HITS_MAP, hist_map, unmatched_map  # jinja2 with them: only here

        self.attached = attached  # USDT probes attached, as trace counts them (None: bpftrace's attach points)
        self.maps: dict[str, tuple] = {HITS_MAP: ("hits", None)}
        for span in catalog.spans if catalog is not None else ():
            self.maps[hist_map(span)] = ("span", span)
            self.maps[unmatched_map(span)] = ("unmatched", span)

    def convert(self, line: str) -> list[str]:
        if not line.strip():
            return []
        try:
            event = json.loads(line)
        except ValueError:
            return [json.dumps({"type": "text", "text": line})]
        kind, data = (event.get("type"), event.get("data")) if isinstance(event, dict) else (None, None)
        if kind == "attached_probes" and isinstance(data, dict):
            probes = data.get("probes") if self.attached is None else self.attached
            return [json.dumps({"type": "attached", "probes": probes})]
        if kind == "time" and isinstance(data, str):
            return [json.dumps({"type": "interval", "time": data.strip()})]
        if kind in ("hist", "map") and isinstance(data, dict) and len(data) == 1:
            (name, value), = data.items()
            what, span = self.maps.get(name, (None, None))
            if what == "hits" and isinstance(value, dict):
                return [json.dumps({"type": "hits", "probe": k, "count": v}) for k, v in value.items() if v]
            if what == "unmatched" and isinstance(value, int):
                return [json.dumps({"type": "unmatched", "span": span.name, "count": value})] if value else []
            keyed = value if span is not None and span.by else {"": value}
            if what == "span" and isinstance(keyed, dict):
                hists = [_hist(span, key, buckets) for key, buckets in keyed.items()]
                return [json.dumps(h) for h in hists if h["count"]]
        return [line]


def _hist(span, key: str, buckets) -> dict:
    # bpftrace joins a tuple key's parts with ','; an enum without a name prints its number.
    by = {b.name: int(part) if b.arg.ctype.is_integer_like and part.lstrip("-").isdigit() else part
          for b, part in zip(span.by, key.split(",", len(span.by) - 1))}
    kept = [b for b in buckets if isinstance(b, dict) and b.get("count")]
    return {"type": "span", "span": span.name, "by": by, "unit": "us",
            "count": sum(b["count"] for b in kept), "buckets": kept}
