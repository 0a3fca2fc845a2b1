"""Run bpftrace scripts written with SPDK's markers against a live process.

``usdt:__EXE__:NAME`` becomes ``usdt:FILE:NAME`` where FILE is the file
that really holds probe NAME for that process: the executable, or one of
the shared libraries mapped in ``/proc/PID/maps`` (read with the note
reader of ``probegen.elf``). ``__PID__`` becomes the pid. bpftrace then
runs on the result with ``-p PID``; no shell is involved.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from probegen.errors import InputError, read_input

# usdt:__EXE__:NAME or usdt:__EXE__:PROVIDER:NAME
_USDT_MARKER = re.compile(r"\busdt:__EXE__:(?:(?P<provider>[A-Za-z_]\w*):)?(?P<name>[A-Za-z_]\w*)\b")
_STRLEN = re.compile(r"BPFTRACE_STRLEN=(\d+)")
# bpftrace 0.17 accepts one BEGIN and one END probe per program.
_SPECIAL_PROBE = re.compile(r"^\s*(BEGIN|END)\b", re.M)


@dataclass(frozen=True)
class Script:
    path: str
    text: str


def read_scripts(paths) -> list[Script]:
    scripts = []
    for path in paths:
        data = read_input(path, "script")  # regular files and pipes, bounded: never a device or a writerless FIFO
        try:
            scripts.append(Script(str(path), data.decode("utf-8")))
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: error: cannot read: {exc}") from None
    return scripts


def _proc(pid: int, *parts: str) -> Path:
    return Path("/proc", str(pid), *parts)


def check_process(pid: int) -> None:
    if pid <= 0 or not _proc(pid).is_dir():
        raise InputError(f"probegen trace: error: no process with pid {pid}")


def executable(pid: int) -> str:
    try:
        return os.readlink(_proc(pid, "exe"))
    except FileNotFoundError:
        raise InputError(f"probegen trace: error: no process with pid {pid}") from None
    except PermissionError:
        raise InputError(f"probegen trace: error: cannot see the executable of pid {pid}: permission denied (run as root)") from None


def mapped_files(pid: int) -> list[str]:
    """The executable, then every file mapped into the process, each once."""
    try:
        maps = _proc(pid, "maps").read_text()
    except FileNotFoundError:
        raise InputError(f"probegen trace: error: no process with pid {pid}") from None
    except PermissionError:
        raise InputError(f"probegen trace: error: cannot read /proc/{pid}/maps: permission denied (run as root)") from None
    files = [executable(pid)]
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)  # address perms offset dev inode path
        if len(fields) == 6 and fields[5].startswith("/") and not fields[5].endswith(" (deleted)"):
            files.append(fields[5])
    return list(dict.fromkeys(files))


def _readable(pid: int, path: str) -> str:
    """The path as this process can open it (the target may be in another
    mount namespace)."""
    return path if os.path.exists(path) else str(_proc(pid)) + "/root" + path


def probe_files(pid: int) -> dict[tuple[str, str], str]:
    """(provider, name) -> the first mapped file holding that probe."""
    from probegen.elf.notes import ElfError, read_binary

    found: dict[tuple[str, str], str] = {}
    for path in mapped_files(pid):
        try:
            binary = read_binary(_readable(pid, path))
        except ElfError:
            continue  # not an ELF file (locale archive, data file)
        for probe in binary.probes:
            found.setdefault(probe.key, path)
    return found


def resolve(script: Script, pid: int, probes: dict[tuple[str, str], str], exe: str) -> str:
    """The script with its markers replaced for this process."""
    missing = []

    def holder(match: re.Match) -> str:
        provider, name = match["provider"], match["name"]
        paths = [p for (prov, n), p in probes.items() if n == name and provider in (None, prov)]
        if not paths:
            missing.append(f"{provider}:{name}" if provider else name)
            return match[0]
        return match[0].replace("__EXE__", paths[0], 1)

    text = _USDT_MARKER.sub(holder, script.text)
    if missing:
        raise InputError(
            f"{script.path}: error: process {pid} ({exe}) has no probe {', '.join(missing)} "
            "in its executable or mapped libraries"
        )
    return text.replace("__EXE__", exe).replace("__PID__", str(pid))


def combine(scripts: list[Script], texts: list[str]) -> str:
    """One bpftrace program from several scripts (shebang lines dropped)."""
    for keyword in ("BEGIN", "END"):
        having = [s.path for s, t in zip(scripts, texts) if keyword in _SPECIAL_PROBE.findall(t)]
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


def strlen(program: str) -> int | None:
    """BPFTRACE_STRLEN the generated scripts ask for, if any."""
    values = [int(v) for v in _STRLEN.findall(program)]
    return max(values) if values else None


def program_for(pid: int, paths) -> str:
    """The bpftrace program `probegen trace` would run."""
    check_process(pid)
    scripts = read_scripts(paths)
    exe = executable(pid)
    probes = probe_files(pid)
    return combine(scripts, [resolve(s, pid, probes, exe) for s in scripts])


def command(pid: int, program_file: str, output: str | None = None, bpftrace: str = "bpftrace") -> list[str]:
    argv = [bpftrace, "-p", str(pid)]
    if output is not None:
        argv += ["-o", output]
    return argv + [program_file]


def find_bpftrace() -> str:
    path = shutil.which("bpftrace")
    if path is None:
        raise InputError("probegen trace: error: bpftrace not found on PATH (install the bpftrace package)")
    return path


def run(pid: int, paths, output: str | None = None) -> int:
    """Trace until bpftrace ends (Ctrl-C, SIGTERM, or the process exits);
    returns bpftrace's exit status."""
    if os.geteuid() != 0:
        raise InputError("probegen trace: error: bpftrace needs root: run as root (e.g. with sudo)")
    bpftrace = find_bpftrace()
    program = program_for(pid, paths)
    env = dict(os.environ)
    wanted = strlen(program)
    if wanted and "BPFTRACE_STRLEN" not in env:
        env["BPFTRACE_STRLEN"] = str(wanted)
    with tempfile.NamedTemporaryFile("w", prefix="probegen-", suffix=".bt") as file:
        file.write(program)
        file.flush()
        child = subprocess.Popen(command(pid, file.name, output, bpftrace), env=env)
        return _wait_forwarding_signals(child)


def _wait_forwarding_signals(child: subprocess.Popen) -> int:
    """Wait for bpftrace; Ctrl-C or SIGTERM sent to us go to it, so it
    prints its maps and exits cleanly rather than being orphaned."""
    def forward(signum, _frame):
        if child.poll() is None:
            child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            try:
                return child.wait()
            except InterruptedError:
                continue
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
