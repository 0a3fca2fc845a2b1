"""Running real tracers against real test programs.

A test program prints READY, waits for a line on stdin, then fires its
probes, printing "EXPECT <line>" (the tracer line it must cause, without
the timestamp) for each hit, and DONE. Tracers (bpftrace through
`probegen trace`, or a generated BCC tool) are started against it; each
prints a header line once attached (bpftrace runs BEGIN only after every
probe is attached; the BCC tool prints after attaching), and only then is
the program told to go. No sleeps.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from probegen.catalog import load_catalog
from probegen.generators.header import render_header
from helpers import C_DIR, REPO, STUBS, SYSTEM_PYTHON, compile_c, require_root, spdk_config
TIMEOUT = 60.0
LINE = re.compile(r"^(\d+)\.(\d{6}): (.*)$")


def require_bcc() -> None:
    require_root()
    if not Path(SYSTEM_PYTHON).exists():
        pytest.skip(f"{SYSTEM_PYTHON} not found (BCC imports only in the system Python)")
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import bcc"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("python3-bpfcc not installed (import bcc failed in /usr/bin/python3)")
    if not Path(f"/lib/modules/{os.uname().release}/build/include").exists():
        pytest.skip("kernel headers not linked where BCC looks (run tools/setup.sh --test)")


class Process:
    """A child whose output lines are collected by a thread, so a test can
    wait for a line with a timeout; ``arrived``: each line (stdout or
    stderr) -> seconds from the start to its first arrival."""

    def __init__(self, argv, *, stdin=False, env=None, cwd=None):
        self.argv = [str(a) for a in argv]
        self.arrived: dict[str, float] = {}
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
            text=True, errors="surrogateescape", start_new_session=True,
        )
        self.lines: list[str] = []
        self.stderr: list[str] = []
        self._new = queue.Queue()
        self._threads = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.lines, True), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.stderr, False), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def drain(self, timeout: float = 10) -> None:
        """After the process ended: wait until all its output is read."""
        for thread in self._threads:
            thread.join(timeout)

    def _read(self, stream, into, notify):
        for line in stream:
            self.arrived.setdefault(line.rstrip("\n"), time.monotonic() - self.started)
            into.append(line.rstrip("\n"))
            if notify:
                self._new.put(None)
        if notify:
            self._new.put(None)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_for(self, predicate, what: str, timeout: float = TIMEOUT):
        """Wait until predicate(lines) is true; fail naming what was awaited."""
        deadline = time.monotonic() + timeout
        while True:
            result = predicate(self.lines)
            if result:
                return result
            if self.proc.poll() is not None and self._new.empty():
                time.sleep(0.05)  # let the reader threads finish
                result = predicate(self.lines)
                if result:
                    return result
                self.fail(f"exited ({self.proc.returncode}) before {what}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.fail(f"timed out waiting for {what}")
            try:
                self._new.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                pass

    def wait_line(self, text: str, timeout: float = TIMEOUT):
        return self.wait_for(lambda lines: text in lines or any(l.startswith(text) for l in lines), repr(text), timeout)

    def send(self, text: str) -> None:
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    def end(self) -> int:
        """Once the traced process has exited: a tracer given -p ends with
        it (a SIGINT sent meanwhile raced bpftrace's own exit and killed it:
        exit 254); one still running after a while (on a binary alone) is
        stopped with SIGINT."""
        try:
            return self.proc.wait(10)
        except subprocess.TimeoutExpired:
            return self.stop(signal.SIGINT)

    def stop(self, sig=signal.SIGINT, timeout: float = TIMEOUT) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.fail("did not exit after " + signal.Signals(sig).name)

    def fail(self, why: str):
        self.kill()
        time.sleep(0.05)
        pytest.fail(
            f"{' '.join(self.argv)}: {why}\n--- stdout ---\n" + "\n".join(self.lines[-40:])
            + "\n--- stderr ---\n" + "\n".join(self.stderr[-40:])
        )

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def build_program(source: Path, catalog_path: Path, header_name: str, directory: Path,
                  defines=(), include_dirs=(), extra=()) -> Path:
    """Compile a test program against the header generated from catalog_path."""
    catalog = load_catalog(catalog_path)
    include = directory / "include"
    header = include / header_name
    header.parent.mkdir(parents=True, exist_ok=True)
    header.write_text(render_header(catalog))
    binary = directory / source.stem
    compile_c([source], binary, include_dirs=[include, *include_dirs], defines=defines, extra=extra)
    return binary


def wait_attached(pid: int, script: str, timeout: float = TIMEOUT) -> None:
    """Wait until every site, in the process's executable, of the probes
    the script names carries the kernel's breakpoint (int3 read through
    /proc/PID/mem): plain bpftrace prints "Attaching" before it attaches,
    and nothing after."""
    from probegen.elf.notes import read_binary

    names = set(re.findall(r"usdt:[^:\s]*:\w+:(\w+)", script))
    exe = Path(f"/proc/{pid}/exe")
    inode = exe.stat().st_ino
    base = next(int(line.split("-")[0], 16) for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
                if line.split()[4] == str(inode) and line.split()[2] == "00000000")
    if exe.read_bytes()[16] == 2:  # ET_EXEC: its sites' addresses are where they run
        base = 0
    sites = [base + site.address for probe in read_binary(exe).probes if probe.name in names for site in probe.sites]
    assert sites, f"none of {sorted(names)} in process {pid}"
    deadline = time.monotonic() + timeout
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as memory:
        while True:
            breakpoints = 0
            for address in sites:
                memory.seek(address)
                breakpoints += memory.read(1) == b"\xcc"
            if breakpoints == len(sites):
                return
            if time.monotonic() > deadline:
                pytest.fail(f"{breakpoints} of the {len(sites)} sites of {sorted(names)} attached in {timeout} s")
            time.sleep(0.05)


def probegen_argv(*args) -> list[str]:
    return [sys.executable, "-m", "probegen", *map(str, args)]


def tracer_lines(lines: list[str]) -> list[str]:
    """Hit lines without their timestamps; timestamps are checked here."""
    hits = []
    for line in lines:
        match = LINE.match(line)
        if match:
            hits.append(match[3])
    return hits


def expected_lines(program: Process) -> list[str]:
    return [l[len("EXPECT "):] for l in program.lines if l.startswith("EXPECT ")]


def run_traced(program_argv, tracers: dict, header_prefix: str = "Tracing ", *, count_done=None):
    """Start the program, the tracers (name -> argv, given the pid), wait
    until each is attached, let the program fire, wait until each tracer
    printed what it should (count_done(name, expected) -> int lines), stop them.

    Returns (program, {name: Process}).
    """
    program = Process(program_argv, stdin=True)
    program.wait_line("READY")
    running = {}
    try:
        for name, argv in tracers.items():
            running[name] = Process(argv(program.pid))
        for name, tracer in running.items():
            tracer.wait_for(lambda lines: any(l.startswith(("Tracing ", "Counting ")) for l in lines),
                            f"{name} to attach")
        program.send("go\n")
        program.wait_line("DONE")
        expected = expected_lines(program)
        for name, tracer in running.items():
            want = count_done(name, expected) if count_done else len(expected)
            if want:
                tracer.wait_for(lambda lines: len(tracer_lines(lines)) >= want, f"{name} to print {want} hits")
        assert program.proc.wait(TIMEOUT) == 0
        for tracer in running.values():
            tracer.end()
    finally:
        program.kill()
        for tracer in running.values():
            tracer.kill()
    for process in (program, *running.values()):
        process.drain()
    return program, running


SPDK_CATALOG = REPO / "probes.yaml"


def build_spdk_program(directory: Path) -> Path:
    """tracing_spdk.c against the header of the default SPDK catalog, with
    USDT configured on as SPDK's configure does."""
    config = spdk_config(directory / "config", usdt=True)
    return build_program(C_DIR / "tracing_spdk.c", SPDK_CATALOG, "spdk_internal/usdt.h", directory,
                         include_dirs=[config, STUBS])
