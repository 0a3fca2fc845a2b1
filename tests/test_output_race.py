"""Root writing outputs where another user can change the path (issue 23,
item 1), tried for real: a process running as `nobody` swaps its directory
for a link to a root-only one with renameat2(RENAME_EXCHANGE) in a loop
while root writes; and a swap made exactly between probegen's checks and its
rename. The outcome asked for: nothing created or replaced in the root-only
directory, every refused run one line with exit 2.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from probegen.files import output
from probegen.files.output import GeneratedFile, UnwritableOutput, open_stream, write_if_changed

REPO = Path(__file__).parent.parent
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a directory owned by nobody, setuid)")
RENAME_EXCHANGE = 2
_libc = ctypes.CDLL(None, use_errno=True)


def exchange(a, b) -> None:
    if _libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), str(a))


def start_swapper(real: Path, link: Path, uid: int) -> int:
    """A child, setuid to ``uid``, exchanging ``real`` and ``link`` until killed."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(pwd.getpwuid(uid).pw_gid)
            os.setuid(uid)
            while True:
                exchange(real, link)
        finally:
            os._exit(1)
    return pid


def stop(pid: int) -> None:
    os.kill(pid, 9)
    os.waitpid(pid, 0)


@pytest.fixture
def victim(tmp_path) -> Path:
    """A root-only directory holding a root-only file without the marker."""
    victim = tmp_path / "root-only"
    victim.mkdir(mode=0o700)
    (victim / "usdt.h").write_text("precious\n")
    os.chmod(victim / "usdt.h", 0o600)
    return victim


def assert_untouched(victim: Path) -> None:
    assert sorted(p.name for p in victim.iterdir()) == ["usdt.h"]
    assert (victim / "usdt.h").read_text() == "precious\n"


@root_only
def test_swapping_loop_by_the_directory_owner_writes_nothing_as_root(tmp_path, victim):
    nobody = pwd.getpwnam("nobody").pw_uid
    shared = tmp_path / "shared"
    (shared / "out").mkdir(parents=True)
    (shared / "link").symlink_to(victim)
    for path in (shared, shared / "out", shared / "link"):
        os.chown(path, nobody, nobody, follow_symlinks=False)
    (tmp_path / "probes.yaml").write_bytes((REPO / "probes.yaml").read_bytes())
    swapper = start_swapper(shared / "out", shared / "link", nobody)
    try:
        refused = 0
        for i in range(300):  # in process: each try is one walk, check and write
            for name in ("usdt.h", f"new{i}.h"):
                try:
                    write_if_changed(GeneratedFile(shared / "out" / name, f"{name}\n"), True)
                except UnwritableOutput:
                    refused += 1
            try:
                os.close(open_stream(shared / "out" / "trace.txt"))
            except UnwritableOutput:
                refused += 1
        runs = [subprocess.run([sys.executable, "-m", "probegen", cmd, "-o", shared / "out" / "usdt.h"],
                               capture_output=True, text=True, cwd=tmp_path, timeout=120)
                for cmd in ("header", "docs") for _ in range(3)]
    finally:
        stop(swapper)
    assert refused == 900
    for run in runs:
        assert run.returncode == 2 and "Traceback" not in run.stderr
        assert len(run.stderr.splitlines()) == 1 and "which its owner (uid" in run.stderr, run.stderr
    assert_untouched(victim)
    real = next(p for p in (shared / "out", shared / "link") if not p.is_symlink())
    assert not list(real.iterdir())


@pytest.mark.parametrize("existing", [False, True])
def test_directory_swapped_between_check_and_rename(tmp_path, victim, monkeypatch, existing):
    """The final directory's name is exchanged with a link to the root-only
    directory right before the rename (the moment the old code lost): the
    file lands in the directory that was checked, now under the other name."""
    out = tmp_path / "out"
    out.mkdir()
    if existing:
        (out / "usdt.h").write_text("old\n")
    (tmp_path / "link").symlink_to(victim)
    real_rename = os.rename

    def swap_then_rename(*args, **kwargs):
        exchange(out, tmp_path / "link")
        return real_rename(*args, **kwargs)

    monkeypatch.setattr(output.os, "rename", swap_then_rename)
    assert write_if_changed(GeneratedFile(out / "usdt.h", "generated\n"))
    assert_untouched(victim)
    assert (tmp_path / "link" / "usdt.h").read_text() == "generated\n" and out.is_symlink()


@root_only
def test_sticky_directory_only_with_a_directory_of_your_own(tmp_path, victim):
    nobody = pwd.getpwnam("nobody").pw_uid
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    (sticky / "mine").mkdir()
    for name, mode in (("theirs", 0o755), ("their-sticky", 0o1777)):
        (sticky / name).mkdir()
        os.chmod(sticky / name, mode)
        os.chown(sticky / name, nobody, nobody)
    assert write_if_changed(GeneratedFile(sticky / "mine" / "sub" / "usdt.h", "ok\n"))
    assert (sticky / "mine" / "sub" / "usdt.h").read_text() == "ok\n"
    with pytest.raises(UnwritableOutput, match="which its owner"):
        write_if_changed(GeneratedFile(sticky / "theirs" / "usdt.h", "no\n"))
    with pytest.raises(UnwritableOutput, match="belongs to uid"):  # a sticky one's entries are its owner's
        write_if_changed(GeneratedFile(sticky / "their-sticky" / "usdt.h", "no\n"))
    assert not list((sticky / "theirs").iterdir()) and not list((sticky / "their-sticky").iterdir())
    # nobody cannot move root's directory out of the sticky one to swap it.
    swap = subprocess.run(["setpriv", f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups", "mv",
                           sticky / "mine", sticky / "moved"], capture_output=True, text=True)
    assert swap.returncode != 0 and (sticky / "mine").is_dir()


def test_group_or_world_writable_directory_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(UnwritableOutput) as refused:
        write_if_changed(GeneratedFile(shared / "sub" / "usdt.h", "no\n"))
    assert "passes through" in str(refused.value) and "every user" in str(refused.value)
    assert not list(shared.iterdir())
    assert stat.S_IMODE(shared.stat().st_mode) == 0o777


@root_only
def test_check_reads_through_a_directory_it_would_not_write_through(tmp_path):
    """Reading decides no write: `check` as root in another user's checkout
    says whether the outputs are current; `header` there is refused."""
    nobody = pwd.getpwnam("nobody").pw_uid
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "probes.yaml").write_bytes((REPO / "probes.yaml").read_bytes())
    generated = subprocess.run([sys.executable, "-m", "probegen", "generate", "-q"], cwd=checkout,
                               capture_output=True, text=True)
    assert generated.returncode == 0, generated.stderr
    for path in (checkout, *checkout.rglob("*")):
        os.chown(path, nobody, nobody, follow_symlinks=False)
    check = subprocess.run([sys.executable, "-m", "probegen", "check"], cwd=checkout, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    header = subprocess.run([sys.executable, "-m", "probegen", "header", "-o", "new.h"], cwd=checkout,
                            capture_output=True, text=True)
    assert header.returncode == 2 and len(header.stderr.splitlines()) == 1, header.stderr
    assert "which its owner (uid" in header.stderr and not (checkout / "new.h").exists()
