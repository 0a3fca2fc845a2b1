"""Parsing what another user chose in a forked child that gives up root for good, runs under limits,
answers with plain JSON data and is killed at the deadline (doc/security.md, "Privilege separation").
Every failure is one ``Unprivileged`` error line.
"""

import contextlib
import ctypes
import json
import os
import pwd
import resource
import select
import signal
import time

from probegen.errors import InputError, printable

MEMORY = 2 << 30          # address space: DWARF of a large program fits
OUTPUT = 64 << 20         # bytes of result read back
CPU_SECONDS = 60
_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38


class Unprivileged(InputError):
    pass


def deadline_in(seconds: float) -> float:
    return time.monotonic() + seconds


def run_unprivileged(function, *args, deadline: float, what: str = "parsing", modules=()):
    """``function(*args)`` in a child running as nobody, its result through JSON (tuples come back as
    lists). The ``modules`` it uses are imported whole before the fork: the child may be unable to read
    Python's files (a Python under /root), and pyelftools imports some on the way to an error."""
    _import_all(("zlib", "pprint", *modules))
    ends: list[int] = []
    try:  # out of descriptors (trace holds each file a process maps), processes or memory
        ends += os.pipe()
        pid = os.fork()
    except OSError as exc:
        for fd in ends:
            os.close(fd)
        raise Unprivileged(f"probegen: error: {what} could not start a process: {exc.strerror}") from None
    read_end, write_end = ends
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child(write_end, function, args, deadline, what)
    os.close(write_end)
    data = None
    try:
        data = _read_until(read_end, deadline)
    finally:
        os.close(read_end)
        if data is None or len(data) > OUTPUT:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        status = os.waitpid(pid, 0)[1]
    if data is None:
        raise Unprivileged(f"probegen: error: {what} took too long (the time limit is shared by every file "
                           "read at start-up); the process's files may be built to make a reader loop")
    if len(data) > OUTPUT:
        raise Unprivileged(f"probegen: error: {what} gave more than {OUTPUT >> 20} MiB of results")
    if not data:
        raise Unprivileged(f"probegen: error: {what} ended without a result ({_status(status)})")
    reply = None
    with contextlib.suppress(ValueError, RecursionError):  # a child taken over by what it read may say anything
        reply = json.loads(data)
    if isinstance(reply, dict) and isinstance(reply.get("error"), str):
        raise Unprivileged(printable(reply["error"]))
    if not isinstance(reply, dict) or "result" not in reply or "error" in reply:
        raise Unprivileged(f"probegen: error: {what} gave no result probegen can read")
    return reply["result"]


def _import_all(names) -> None:
    import importlib
    import pkgutil

    for name in names:
        module = importlib.import_module(name)
        for found in pkgutil.walk_packages(getattr(module, "__path__", ()), f"{name}."):
            with contextlib.suppress(Exception):  # an optional part (a tool's script): the child does without
                importlib.import_module(found.name)


def _read_until(fd: int, deadline: float) -> bytes | None:
    """What the child writes before it closes the pipe (OUTPUT + 1 bytes at most), or None at the deadline."""
    data = bytearray()
    poller = select.poll()  # not select(): the pipe's descriptor may be past 1023
    poller.register(fd, select.POLLIN)
    while len(data) <= OUTPUT:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not poller.poll(remaining * 1000):
            return None
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _status(status: int) -> str:
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        limit = {signal.SIGXCPU: ": CPU time limit", signal.SIGKILL: ": killed, perhaps a limit",
                 signal.SIGSEGV: ": memory limit or a crash"}.get(signum, "")
        names = {s.value: s.name for s in signal.Signals}  # not every real-time signal: another nobody may send one
        return f"signal {names.get(signum, signum)}{limit}"
    return f"exit code {os.WEXITSTATUS(status)}"


def _child(write_end: int, function, args, deadline: float, what: str):
    try:
        try:
            _give_up_root()
            _limit(deadline)
            reply = {"result": function(*args)}
        except InputError as exc:
            reply = {"error": str(exc).split("\n", 1)[0]}
        except MemoryError:
            reply = {"error": f"probegen: error: {what} needed more than the {MEMORY >> 20} MiB memory limit"}
        except Exception as exc:  # a reader's bug on hostile data: one line, no traceback
            reply = {"error": f"probegen: error: {what} failed: {type(exc).__name__}: {exc}"}
        with os.fdopen(write_end, "wb") as pipe:  # a buffered write: all of it
            pipe.write(json.dumps(reply).encode())
        os._exit(0)
    finally:  # nothing may escape a forked child
        os._exit(1)


def _give_up_root() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        os.setgroups([])
        os.setresgid(nobody.pw_gid, nobody.pw_gid, nobody.pw_gid)
        os.setresuid(nobody.pw_uid, nobody.pw_uid, nobody.pw_uid)
        if nobody.pw_uid == 0 or 0 in os.getresuid():
            raise OSError("still root")
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")


def _limit(deadline: float) -> None:
    cpu = max(1, min(CPU_SECONDS, int(deadline - time.monotonic()) + 1))
    for limit, value in ((resource.RLIMIT_AS, MEMORY), (resource.RLIMIT_CPU, cpu),
                         (resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(limit, (value, value))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write fails (EFBIG) instead of killing
