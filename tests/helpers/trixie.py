"""Debian 13's tracers (bpftrace 0.23, BCC 0.31), in the root that
``tools/setup.sh --test`` makes with debootstrap. A traced program must run
inside the root too, so that the tracer resolves the paths it sees: tests
copy it there and start it with chroot."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from helpers import require_root

ROOT = Path.home() / ".cache" / "probegen-tests" / "debian13"
BOUND = ("proc", "sys", "dev")


@contextmanager
def mounted_root():
    """The root with /proc, /sys and /dev bound in (the last two read-only) while in use
    (unbound after: a bind mount left in a cache directory would let a later
    rm -r of that directory delete the machine's /dev), or skip."""
    require_root()
    if not (ROOT / "usr/bin/bpftrace").exists():
        pytest.skip(f"no Debian 13 root in {ROOT}: tools/setup.sh --test makes it (debootstrap)")
    mounted = []
    try:
        for name in BOUND:
            target = ROOT / name
            if not os.path.ismount(target):
                # /proc stays writable: BCC raises a probe's semaphore through /proc/PID/mem
                options = ["-o", "ro"] if name != "proc" else []
                subprocess.run(["mount", "--bind", *options, f"/{name}", str(target)], check=True)
                mounted.append(target)
        yield ROOT
    finally:
        for installed in (ROOT / "opt").glob("probegen-test-*"):  # install()'s, of this session and before
            shutil.rmtree(installed, ignore_errors=True)
        for target in reversed(mounted):
            subprocess.run(["umount", "--lazy", str(target)], check=False)


def install(root: Path, *files: Path) -> list[str]:
    """Copy files into a fresh directory of the root: their paths inside it."""
    (root / "opt").mkdir(exist_ok=True)
    directory = Path(tempfile.mkdtemp(dir=root / "opt", prefix="probegen-test-"))
    for file in files:
        shutil.copy2(file, directory / file.name)
    return [f"/opt/{directory.name}/{file.name}" for file in files]


def inside(root: Path, *argv) -> list[str]:
    return ["chroot", str(root), *map(str, argv)]
