"""Parsing without root (issue 23): probegen.files.unprivileged runs a
function in a child that gave up root, within limits, and `probegen trace`
parses the traced process's files only there. Bounds stated and checked:
a deadline (2 s here, 30 s for trace's start-up), 2 GiB of address space
(a 3 GiB allocation fails), 64 MiB of result (a larger one is refused), no
file written; each failure is one error line."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.drift import DRIFT_CATALOG, build_drift
from helpers.tracing import Process
from probegen.files.inputs import open_seekable
from probegen.files.unprivileged import Unprivileged, deadline_in, run_unprivileged
from probegen.runtime import fit

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (it gives root up to nobody)")


def identity():
    status = Path("/proc/self/status").read_text()
    no_new_privs = next(line.split()[1] for line in status.splitlines() if line.startswith("NoNewPrivs:"))
    return [list(os.getresuid()), list(os.getresgid()), os.getgroups(), no_new_privs]


@root_only
def test_the_child_is_nobody_for_good():
    nobody = pwd.getpwnam("nobody")
    uids, gids, groups, no_new_privs = run_unprivileged(identity, deadline=deadline_in(30))
    assert uids == [nobody.pw_uid] * 3 and gids == [nobody.pw_gid] * 3
    assert groups == [] and no_new_privs == "1"


def read_head(path):
    """As probegen's readers open their files."""
    stream, _ = open_seekable(path, "file")
    with stream:
        return stream.read(6).decode()


@root_only
def test_a_root_only_file_is_read_through_roots_descriptor_only(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("secret\n")
    secret.chmod(0o600)
    fd = os.open(secret, os.O_RDONLY)
    try:
        assert run_unprivileged(read_head, f"/proc/self/fd/{fd}", deadline=deadline_in(30)) == "secret"
    finally:
        os.close(fd)
    with pytest.raises(Unprivileged, match="Permission denied"):
        run_unprivileged(read_head, str(secret), deadline=deadline_in(30))


def spin():
    while True:
        pass


def allocate():
    return len(bytearray(3 << 30))


def big_result():
    return "x" * (65 << 20)


def write_file(path):
    Path(path).write_text("written\n")
    return True


def test_deadline_memory_output_and_files_are_bounded(tmp_path):
    start = time.monotonic()
    with pytest.raises(Unprivileged, match="took too long"):
        run_unprivileged(spin, deadline=deadline_in(2))
    assert time.monotonic() - start < 10
    with pytest.raises(Unprivileged, match="memory limit"):
        run_unprivileged(allocate, deadline=deadline_in(30))
    with pytest.raises(Unprivileged, match="more than 64 MiB"):
        run_unprivileged(big_result, deadline=deadline_in(30))
    with pytest.raises(Unprivileged) as refused:
        run_unprivileged(write_file, str(tmp_path / "written"), deadline=deadline_in(30))
    assert len(str(refused.value).splitlines()) == 1 and not (tmp_path / "written").exists()


def forged(reply: bytes):
    """As a child taken over by what it read: a reply of its own making on the pipe."""
    os.write(sys._getframe(1).f_locals["write_end"], reply)
    os._exit(0)


@pytest.mark.parametrize("reply", [b'{"result": 1, "error": 2}', b"[" * 200_000, b'{"error": 2}', b"[1]"])
def test_a_forged_reply_is_one_error_line(reply):
    """Not a traceback: an error that is not text, JSON nested past Python's recursion limit."""
    with pytest.raises(Unprivileged, match="^probegen: error: parsing gave no result probegen can read$"):
        run_unprivileged(forged, reply, deadline=deadline_in(30))


def killed(signum):
    os.kill(os.getpid(), signum)


def test_a_child_killed_by_any_signal_is_one_error_line():
    """A real-time signal Python names no member for (the child is nobody: any process running as
    nobody, the traced one among them, may send it one)."""
    with pytest.raises(Unprivileged, match=r"^probegen: error: parsing ended without a result \(signal 40\)$"):
        run_unprivileged(killed, 40, deadline=deadline_in(30))
    with pytest.raises(Unprivileged, match=r"\(signal SIGKILL: killed, perhaps a limit\)$"):
        run_unprivileged(killed, int(signal.SIGKILL), deadline=deadline_in(30))


@pytest.mark.parametrize("call, code", [("pipe", "EMFILE"), ("fork", "EAGAIN")])
def test_a_pipe_or_fork_that_fails_is_one_error_line(monkeypatch, call, code):
    """Bug: an OSError of pipe() (out of descriptors: trace holds each file a process maps) or
    fork() (out of processes) was a traceback; no descriptor is left open."""
    import errno

    def fail():
        raise OSError(getattr(errno, code), os.strerror(getattr(errno, code)))

    before = len(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(os, call, fail)
    with pytest.raises(Unprivileged, match=rf"^probegen: error: parsing could not start a process: "
                                           rf"{os.strerror(getattr(errno, code))}$"):
        run_unprivileged(killed, 40, deadline=deadline_in(30))
    assert len(os.listdir("/proc/self/fd")) == before


def echo(value):
    return value


def test_a_pipe_past_descriptor_1023_is_read():
    """Bug: select() raised ValueError for a descriptor past 1023 (trace holding a file per mapping)."""
    import resource

    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1200:
        pytest.skip("fewer than 1,200 descriptors allowed")
    held = [os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC) for _ in range(1100)]
    try:
        assert run_unprivileged(echo, [1, "a"], deadline=deadline_in(30)) == [1, "a"]
    finally:
        for fd in held:
            os.close(fd)


@pytest.mark.parametrize("answer", [
    {"binary": {"nvmf_tgt_state": ["/elsewhere", [[1, "A"]]]}, "why": ""},  # a file not opened
    {"binary": {"other_enum": ["exe", [[1, "A"]]]}, "why": ""},             # an enum not asked for
    {"binary": {"nvmf_tgt_state": ["exe", [["1", "A"]]]}, "why": ""},       # not an integer
    {"binary": {"nvmf_tgt_state": ["exe", [[1, "A"], [1, "B"]]]}, "why": ""},
    {"binary": [], "why": ""}, {"binary": {}, "why": 1}, "not a dict",
])
def test_the_childs_answer_is_checked_as_data(answer, monkeypatch, capsys):
    """The answer (its "exe" the traced process's executable, here this test's) is refused as a
    whole: the catalog's names are printed, stderr says why."""
    import json

    from probegen.catalog import load_catalog
    from probegen.files import unprivileged
    from probegen.runtime import trace

    def child(function, catalog, enums, named, **_):
        return json.loads(json.dumps(answer).replace('"exe"', json.dumps(named[0][0])))

    monkeypatch.setattr(unprivileged, "run_unprivileged", child)
    pid, catalog = os.getpid(), load_catalog(DRIFT_CATALOG)
    holders = {("pgdrift", "tgt_state"): (trace.mapped_files(pid)[0], [(trace.NoteFacts(4, True, False, None),)])}
    scripts, _ = fit.regenerate(pid, [trace.Script("tgt.bt", "usdt:*:pgdrift:tgt_state {}")], {0: "tgt"}, catalog,
                                True, False, holders, deadline_in(30), False)
    assert "probegen trace: enum names of nvmf_tgt_state from the catalog drift.yaml: probegen: error: the enum " \
        "names read from debug info are not what probegen asked for" in capsys.readouterr().err
    assert '(arg0 == 5) { $pg_e0 = "FINI_STOP_SUBSYSTEMS"; }' in scripts[0].text


@root_only
def test_trace_reads_a_root_only_binary_through_the_unprivileged_child(tmp_path):
    """The traced program's binary is in a directory only root can enter
    (as /root/spdk/build/bin often is): the child running as nobody still
    finds its probes and enum names, through root's descriptors."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    built = build_drift(tmp_path / "build")
    binary = Path(shutil.copy(built["v25_09"], private / "tgt"))
    scripts = tmp_path / "bt"
    made = subprocess.run([sys.executable, "-m", "probegen", "bpftrace", "-c", DRIFT_CATALOG, "--binary",
                           built["master"], "-o", scripts], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    program = Process([binary], stdin=True)
    try:
        program.wait_line("READY")
        result = subprocess.run([sys.executable, "-m", "probegen", "trace", "-c", DRIFT_CATALOG, str(program.pid),
                                 scripts / "tgt.bt", "--dry-run"], capture_output=True, text=True, timeout=120)
    finally:
        program.kill()
    assert result.returncode == 0, result.stderr
    assert f"enum names from the debug info of '{binary}': nvmf_tgt_state (differs from the catalog's)" \
        in result.stderr, result.stderr
    assert "FINI_STOP_LISTEN" in result.stdout and "usdt:" in result.stdout


def enum_names_of(path):
    from probegen.dwarf import DwarfTypes

    with DwarfTypes.open(path) as types:
        return [e.name for e in types.enumerators("nvmf_tgt_state")]


@root_only
def test_a_process_that_has_read_dwarf_forks_a_reader_that_does_not_hang(tmp_path):
    """drgn reads DWARF on OpenMP threads, and libgomp is not fork-safe: a
    child forked after they exist hung until the deadline (seen in the
    suite, where earlier tests read DWARF in the same process)."""
    binary = build_drift(tmp_path / "build")["master"]
    names = enum_names_of(binary)  # the parent reads DWARF first
    fd = os.open(binary, os.O_RDONLY)
    try:
        started = time.monotonic()
        assert run_unprivileged(enum_names_of, f"/proc/self/fd/{fd}", deadline=deadline_in(30),
                                modules=("probegen.dwarf",)) == names
    finally:
        os.close(fd)
    assert time.monotonic() - started < 15
