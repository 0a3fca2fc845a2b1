"""Run bpftrace scripts against a live process: generated scripts are made
again for it (runtime/fit.py), then the markers of every script (``__EXE__``,
``usdt:*:NAME``, ``__PID__``) name the files that hold its probes. The traced
process is not trusted: doc/security.md says how its file names are kept inert.
"""

from __future__ import annotations

import functools
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from probegen.bpftrace import LEXEME, SPECIAL_PROBE, attach_string, holds_big_strings
from probegen.errors import InputError, Location
from probegen.files.inputs import read_input
from probegen.files.output import open_stream
from probegen.generators.escape import printf_literal
from probegen.runtime.bcc import Reorder
from probegen.runtime.hitlines import STAMP, TID, HitJoiner

_STRLEN = re.compile(r"BPFTRACE_STRLEN=(\d+)")
# address perms offset dev inode path; a path is what follows the spaces.
_MAPS_LINE = re.compile(rb"([0-9a-f]+-[0-9a-f]+) \S+ [0-9a-f]+ [0-9a-f]+:[0-9a-f]+ \d+ +(/.*)")
_DELETED = b" (deleted)"
# /proc/PID/maps: a line per mapping (65,530 by default); more is no process worth tracing.
MAPS_LIMIT = 64 << 20
# Bytes bpftrace 0.17 cannot take in a file name it must match exactly.
_UNNAMEABLE = {b":": "':' (bpftrace splits probe names at colons)",
               b"*": "'*' (a wildcard to bpftrace)",
               b"\n": "a newline"}


@dataclass(frozen=True)
class Script:
    path: str
    text: str


@dataclass(frozen=True)
class MappedFile:
    """A file mapped into the traced process."""

    name: bytes  # as /proc/PID/maps shows it: what BCC and bpftrace look up
    addresses: str  # START-END, its entry in /proc/PID/map_files


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
        raise InputError(f"probegen trace: error: no process with pid {pid}")


def executable(pid: int) -> bytes:
    try:
        return os.readlink(bytes(_proc(pid, "exe")))
    except FileNotFoundError:
        raise InputError(f"probegen trace: error: no process with pid {pid} (or it has no executable)") from None
    except PermissionError:
        raise InputError(f"probegen trace: error: cannot see the executable of pid {pid}: permission denied (run as root)") from None


def _read_maps(pid: int) -> bytes:
    try:
        with open(_proc(pid, "maps"), "rb") as maps:
            data = maps.read(MAPS_LIMIT + 1)
    except FileNotFoundError:
        raise InputError(f"probegen trace: error: no process with pid {pid}") from None
    except PermissionError:
        raise InputError(f"probegen trace: error: cannot read /proc/{pid}/maps: permission denied (run as root)") from None
    except OSError as exc:  # the process exited while being read
        raise InputError(f"probegen trace: error: cannot read /proc/{pid}/maps: {exc.strerror}") from None
    if len(data) > MAPS_LIMIT:
        raise InputError(f"probegen trace: error: /proc/{pid}/maps is larger than {MAPS_LIMIT >> 20} MiB: "
                         "refusing a process with that many mappings")
    return data


def mapped_files(pid: int) -> list[MappedFile]:
    """The executable, then every other file mapped, each once, in the order of
    /proc/PID/maps (split at newlines only: the kernel escapes those in names)."""
    exe = executable(pid)
    files: dict[bytes, MappedFile] = {}
    for line in _read_maps(pid).split(b"\n"):
        match = _MAPS_LINE.fullmatch(line)
        if match is not None and not match[2].endswith(_DELETED):
            files.setdefault(match[2], MappedFile(match[2], match[1].decode()))
    return sorted(files.values(), key=lambda f: f.name != exe)  # stable: the executable first


def open_for_reading(pid: int, mapped: MappedFile) -> int | None:
    """A descriptor reading the mapped file, opened by root for a child without
    root (/proc/self/fd/N), if it is a regular file (reading a device could act
    on it). map_files gives the very file mapped (root only); without root, a
    dry run opens its path in the process's root."""
    flags = os.O_PATH | os.O_CLOEXEC
    try:
        fd = os.open(_proc(pid, "map_files", mapped.addresses), flags)
    except PermissionError:
        try:
            fd = os.open(bytes(_proc(pid, "root")) + mapped.name, flags)
        except OSError:
            return None
    except OSError:
        return None  # unmapped since maps was read
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        pass
    finally:
        os.close(fd)
    return None


STARTUP_SECONDS = 30  # for all a start-up reads from the process's files (notes, enum names)
# Bounds of a probe's sites and arguments the child may report (sdt.h passes at most 12).
_MOST_SITES, _MOST_ARGS = 4096, 12


def probe_holders(pid: int, wanted, deadline: float | None = None,
                  notes: dict | None = None) -> dict[tuple[str | None, str], MappedFile]:
    """For each (provider or None, name) in ``wanted``, the first mapped file
    holding it, its notes parsed in a child without root. ``notes``: filled
    with each found key's sites, each a tuple of its arguments' NoteFacts."""
    from probegen.files.unprivileged import deadline_in, run_unprivileged

    files, descriptors = [], []
    try:
        for mapped in mapped_files(pid):
            fd = open_for_reading(pid, mapped)
            if fd is not None:
                files.append(mapped)
                descriptors.append(fd)
        found = run_unprivileged(_holders_in, [f"/proc/self/fd/{fd}" for fd in descriptors],
                                 sorted(wanted, key=lambda key: (key[0] or "", key[1])),
                                 deadline=deadline or deadline_in(STARTUP_SECONDS),
                                 what=f"reading the probe notes of process {pid}'s files",
                                 modules=("elftools", "probegen.elf"))
    finally:
        for fd in descriptors:
            os.close(fd)
    holders: dict[tuple[str | None, str], MappedFile] = {}
    for item in found if isinstance(found, list) else ():  # the child's answer is checked, not trusted
        if (isinstance(item, list) and len(item) == 4 and isinstance(item[0], int) and 0 <= item[0] < len(files)
                and (item[1] is None or isinstance(item[1], str)) and isinstance(item[2], str)
                and (item[1], item[2]) in wanted and _sites_ok(item[3])):
            key = (item[1], item[2])
            holders.setdefault(key, files[item[0]])
            if notes is not None:
                notes.setdefault(key, [tuple(NoteFacts(*arg) for arg in site) for site in item[3]])
    return holders


@dataclass(frozen=True)
class NoteFacts:
    """One argument of one probe site as its note has it (``constant``: an integer literal passed)."""

    size: int
    signed: bool
    floating: bool
    constant: int | None = None


def _sites_ok(sites) -> bool:
    return (isinstance(sites, list) and 0 < len(sites) <= _MOST_SITES
            and all(isinstance(site, list) and len(site) <= _MOST_ARGS
                    and all(isinstance(arg, list) and len(arg) == 4 and arg[0] in (1, 2, 4, 8)
                            and type(arg[1]) is bool and type(arg[2]) is bool
                            and (arg[3] is None or (type(arg[3]) is int and -(1 << 63) <= arg[3] < 1 << 64))
                            for arg in site)
                    for site in sites))


def _holders_in(paths: list[str], wanted: list) -> list[list]:
    """In the child: [file index, provider or None, name, sites] for the first
    file holding each wanted probe; a site: its arguments' [size, signed,
    floating, integer literal or None]."""
    from probegen.elf.notes import ElfError, read_binary

    missing = {tuple(key) for key in wanted}
    found = []
    for index, path in enumerate(paths):
        if not missing:
            break
        try:
            probes = {probe.key: probe for probe in read_binary(path).probes}
        except ElfError:
            continue  # not an ELF file (locale archive, data file)
        names = {name: probe for (_, name), probe in probes.items()}
        for provider, name in list(missing):
            probe = probes.get((provider, name)) if provider is not None else names.get(name)
            if probe is not None:
                sites = [[[arg.size, arg.signed, arg.floating, _literal(arg)] for arg in site.args]
                         for site in probe.sites]
                found.append([index, provider, name, sites])
                missing.discard((provider, name))
    return found


def _literal(arg) -> int | None:
    """The integer literal a note argument passes ('-4@$0'), else None."""
    operand = getattr(arg, "operand", None)
    if getattr(operand, "kind", None) == "constant" and type(operand.value) is int \
            and -(1 << 63) <= operand.value < 1 << 64:
        return operand.value
    return None


def attach_target(pid: int, mapped: MappedFile, what: str) -> str:
    """The quoted target naming ``mapped`` for bpftrace -p PID (which matches
    /proc/PID/root and the name in /proc/PID/maps), or InputError if
    bpftrace 0.17 cannot name it exactly."""
    try:  # the name as the kernel holds it (root only)
        real = os.readlink(bytes(_proc(pid, "map_files", mapped.addresses)))
    except OSError:
        real = mapped.name
    for name in (real, mapped.name):
        for byte, why in _UNNAMEABLE.items():
            if byte in name:
                raise InputError(f"probegen trace: error: {what} of process {pid} is in {shown(real)}, a file "
                                 f"whose name holds {why}: bpftrace 0.17 cannot attach to it exactly; not tracing")
    if real != mapped.name:
        raise InputError(f"probegen trace: error: {what} of process {pid} is in {shown(real)}, which "
                         f"/proc/{pid}/maps names {shown(mapped.name)}: bpftrace 0.17 cannot attach to it exactly; "
                         "not tracing")
    return attach_string(bytes(_proc(pid, "root")) + mapped.name)


def wanted_probes(script: Script) -> set[tuple[str | None, str]]:
    """The usdt markers of a script that stand in code."""
    return {(m["provider"], m["name"]) for m in LEXEME.finditer(script.text) if m["usdt"]}


def resolve(script: Script, pid: int, holders: dict, exe_target) -> str:
    """The script with its markers replaced for this process, in one pass (nothing
    substituted is scanned again). ``exe_target()``: the executable's target."""
    missing = sorted({f"{p}:{n}" if p else n for p, n in wanted_probes(script) if (p, n) not in holders})
    if missing:
        raise InputError(
            f"process {pid} ({shown(executable(pid))}) has no probe "
            f"{', '.join(missing)} in its executable or mapped files", Location(script.path)
        )
    targets: dict[bytes, str] = {}

    def target(key, mapped: MappedFile) -> str:
        what = f"probe {key[0] + ':' if key[0] else ''}{key[1]}"
        if mapped.name not in targets:
            targets[mapped.name] = attach_target(pid, mapped, what)
        return targets[mapped.name]

    def replace(match: re.Match) -> str:
        if match["comment"] is not None or match["string"] is not None:
            return match[0].replace("__PID__", str(pid))  # digits: inert anywhere
        if match["pid"]:
            return str(pid)
        key = (match["provider"], match["name"])
        value = target(key, holders[key]) if match["usdt"] else exe_target()
        inner_start, inner_end = match.span("usdt" if match["usdt"] else "exe")
        return match[0][:inner_start - match.start()] + value + match[0][inner_end - match.start():]

    return LEXEME.sub(replace, script.text)


def combine(scripts: list[Script], texts: list[str]) -> str:
    """One bpftrace program from several scripts (shebang lines dropped).
    BEGIN and END are counted in the scripts as written."""
    for keyword in ("BEGIN", "END"):
        having = [s.path for s in scripts if keyword in SPECIAL_PROBE.findall(s.text)]
        if len(having) > 1:
            raise InputError(
                f"probegen trace: error: {' and '.join(having)} each have a {keyword} block, and bpftrace "
                "allows one per program: trace them in separate runs (all.bt holds every probe)"
            )
    parts = []
    for text in texts:
        lines = text.splitlines(keepends=True)
        if lines and lines[0].startswith("#!"):
            lines = lines[1:]
        parts.append("".join(lines))
    return "\n".join(parts)


def header(scripts: list[Script], wanted) -> str:
    """A BEGIN block (run once every probe is attached) saying so, for scripts that have none."""
    if any("BEGIN" in SPECIAL_PROBE.findall(s.text) for s in scripts):
        return ""
    names = ", ".join(Path(s.path).stem for s in scripts)
    count = len(wanted)  # USDT probes; a script of uprobes only is not counted
    probes = f"{count} probe{'s' if count != 1 else ''} " if count else ""
    text = f"Tracing {probes}({names}). Hit Ctrl-C to end."
    return f'\nBEGIN\n{{\n\tprintf("{printf_literal(text)}\\n");\n}}\n'


def strlen(text: str) -> int | None:
    """BPFTRACE_STRLEN the scripts as written (not substituted) ask for, if any."""
    values = [int(v) for v in _STRLEN.findall(text)]
    return max(values) if values else None


def _executable_target(pid: int) -> str:
    exe = executable(pid)
    files = mapped_files(pid)
    if not files or files[0].name != exe:
        raise InputError(f"probegen trace: error: process {pid} does not map its executable {shown(exe)} "
                         f"under that name in /proc/{pid}/maps: cannot name it to bpftrace")
    return attach_target(pid, files[0], "the executable")


def program_for(pid: int, paths=(), *, scripts=(), duration: int | None = None, catalog=None,
                debug_info: bool = True, big_strings: bool | None = None, deadline: float | None = None) -> str:
    """The program `probegen trace` would run for the scripts at ``paths`` and
    given as text, for a bpftrace holding big strings or not (None: as on PATH)."""
    check_process(pid)
    if big_strings is None:
        path = shutil.which("bpftrace")
        big_strings = holds_big_strings(path) if path else False
    return _program(pid, read_scripts(paths) + list(scripts), duration, catalog, debug_info, big_strings,
                    deadline=deadline)[0]


def _program(pid: int, scripts: list[Script], duration: int | None = None, catalog=None, debug_info: bool = True,
             big: bool = False, tids: bool = False, deadline: float | None = None) -> tuple[str, int, dict]:
    """(the program, the USDT probes it attaches, the labels of each line made
    again for the process from ``catalog``). ``big``: bpftrace holds big
    strings; ``tids``: those lines name their thread too; ``deadline``: the
    start-up's, for every file it reads."""
    from probegen.files.unprivileged import deadline_in
    from probegen.runtime import fit

    deadline = deadline or deadline_in(STARTUP_SECONDS)
    groups = {n: g for n, s in enumerate(scripts) if (g := fit.generated_group(s, catalog))}
    wanted = set().union(*(wanted_probes(s) for s in scripts))
    notes: dict = {}
    fitted: dict = {}
    holders = probe_holders(pid, wanted, deadline, notes) if wanted else {}
    if groups:
        scripts, fitted = fit.regenerate(pid, scripts, groups, catalog, debug_info, big, holders, notes, deadline, tids)
        if not any(wanted_probes(s) for s in scripts):
            raise InputError(f"probegen trace: error: process {pid} ({shown(executable(pid))}) has none of "
                             "the scripts' probes")
        wanted = set().union(*(wanted_probes(s) for s in scripts))
    exe_target = functools.cache(lambda: _executable_target(pid))
    texts = [resolve(s, pid, holders, exe_target) for s in scripts]
    program = combine(scripts, texts) + header(scripts, wanted)
    if duration is not None:
        # Timed from the attach (bpftrace starts intervals after BEGIN),
        # and ended by exit(): the maps print as on Ctrl-C.
        program += f"\ninterval:s:{int(duration)}\n{{\n\texit();\n}}\n"
    return program, len(wanted), fitted


def run(pid: int, paths=(), output: str | None = None, *, scripts=(), duration: int | None = None,
        json_lines=None, catalog=None, debug_info: bool = True, tap=lambda lines: lines,
        labels: dict | None = None, deadline: float | None = None) -> int:
    """Trace until bpftrace ends (Ctrl-C, SIGTERM, ``duration`` seconds after
    attaching, or the process's exit); returns its exit status. ``json_lines``:
    bpftrace prints -f json, converted by summary.JsonLines. ``tap``: sees the
    joined lines (trace_timeline.Recorder); ``labels``: updated with those of
    each line made again for the process, which then names its thread for ``tap``."""
    if os.geteuid() != 0:
        raise InputError("probegen trace: error: bpftrace needs root: run as root (e.g. with sudo)")
    bpftrace = shutil.which("bpftrace")
    if bpftrace is None:
        raise InputError("probegen trace: error: bpftrace not found on PATH (install the bpftrace package)")
    check_process(pid)
    scripts = read_scripts(paths) + list(scripts)
    program, attached, fitted = _program(pid, scripts, duration, catalog, debug_info, holds_big_strings(bpftrace),
                                         tids=labels is not None, deadline=deadline)
    if labels is not None:
        labels.update(fitted)
    env = dict(os.environ)
    wanted = strlen("\n".join(s.text for s in scripts))
    if wanted and "BPFTRACE_STRLEN" not in env:
        env["BPFTRACE_STRLEN"] = str(wanted)
    # The program: 0600 and O_EXCL under a random name, so nobody can swap it.
    # The output: opened here under output's checks (bpftrace would follow a link).
    output_fd = None if output is None else open_stream(output)
    try:
        with tempfile.NamedTemporaryFile("w", prefix="probegen-", suffix=".bt", encoding="utf-8") as file:
            file.write(program)
            file.flush()
            argv = [bpftrace, "-p", str(pid), *(["-f", "json"] if json_lines is not None else []), file.name]
            child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE)
            if json_lines is not None:
                json_lines.attached = attached
                return _relay(child, json_lines.convert, output_fd, errors="replace")
            hits = Hits(tap, set(fitted) if labels is not None else ())
            return _relay(child, hits.feed, output_fd, hits.finish, tick=True)
    finally:
        if output_fd is not None:
            os.close(output_fd)


class Hits:
    """bpftrace's lines as trace prints them: split hits joined, in timestamp
    order; ``tap`` sees each line first, with the thread the lines of
    probes in ``tids`` print, which is then taken off."""

    def __init__(self, tap=lambda lines: lines, tids=frozenset()) -> None:
        self.joiner = HitJoiner(keep_tid=tids)
        self.ready: list[str] = []
        self.order = Reorder(lambda hit: self.ready.append(hit[1]))
        self.tap, self.tids = tap, tids

    def _add(self, line: str) -> None:
        match = STAMP.match(line)
        if match is None:  # no hit (a banner, maps at exit): after every hit held
            self.order.release()
            self.ready.append(line)
        else:
            self.order.add(((int(match[1]) * 1000000 + int(match[2])) * 1000, line))

    def _take(self) -> list[str]:
        lines, self.ready = self.ready, []
        return [self._untid(line) for line in self.tap(lines)]

    def _untid(self, line: str) -> str:
        match = TID.match(line)
        return match["head"] + line[match.end():] if match and match["probe"] in self.tids else line

    def feed(self, line: str | None) -> list[str]:
        """Lines to print after ``line`` (None: none came, time passed)."""
        for joined in self.joiner.feed(line.rstrip("\n")) if line is not None else ():
            self._add(joined)
        self.order.due()
        return self._take()

    def finish(self) -> list[str]:
        for held in self.joiner.finish():
            self._add(held)
        self.order.release()
        return self._take()


def _relay(child: subprocess.Popen, convert, output_fd: int | None, finish=None, tick: bool = False,
           errors: str = "surrogateescape") -> int:
    """Copy the child's lines through ``convert`` to the output, a burst at a
    time; ``tick``: ``convert(None)`` too after a tenth of a second without
    any (held lines fall due); ``finish()``: lines held at the end. Ctrl-C
    and SIGTERM go to the child, which prints its maps and exits."""
    import sys

    if output_fd is None:
        sys.stdout.flush()
        output_fd = sys.stdout.fileno()
    out = os.fdopen(os.dup(output_fd), "w", encoding="utf-8", errors="surrogateescape")

    def forward(signum, _frame):
        if child.poll() is None:
            child.send_signal(signum)

    source = child.stdout.fileno()
    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        rest = b""
        while True:
            if not select.select([source], [], [], 0.1 if tick else None)[0]:
                lines = [None]
            else:
                data = os.read(source, 1 << 16)
                if not data:
                    break
                *lines, rest = (rest + data).split(b"\n")
                lines = [line.decode("utf-8", errors) for line in lines]
            for line in lines:
                for converted in convert(line):
                    out.write(converted + "\n")
            out.flush()
        for held in ([*convert(rest.decode("utf-8", errors))] if rest else []) + (finish() if finish else []):
            out.write(held + "\n")
        return child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        out.close()
