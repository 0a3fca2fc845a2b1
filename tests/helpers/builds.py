"""Building the example projects for real: meson and ninja from PyPI (the
ones next to this Python), GNU make, CMake, gcc, <sys/sdt.h>.

Examples are copied into a temporary directory and built there, never in
the repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from helpers import EXAMPLES, build_env


def copy_example(name: str, destination: Path) -> Path:
    target = destination / name
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns("build*", "__pycache__"))
    return target


def run(command, cwd: Path, *, check: bool = True) -> subprocess.CompletedProcess:
    """Run a build command; on unexpected failure show its whole output."""
    result = subprocess.run([str(c) for c in command], cwd=cwd, env=build_env(),
                            capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, command))} failed ({result.returncode}):\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


def touch(path: Path) -> None:
    """Make a file newer than everything built so far."""
    os.utime(path, None)


def ninja_log(build_dir: Path) -> list[str]:
    """Outputs in ninja's own build log, one per edge run, oldest first."""
    log = build_dir / ".ninja_log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [line.split("\t")[3] for line in lines if line and not line.startswith("#")]


class NinjaRuns:
    """What one ninja invocation ran, from the entries it added to .ninja_log."""

    def __init__(self, build_dir: Path):
        self.build_dir = build_dir
        self.before = len(ninja_log(build_dir))

    def outputs(self) -> list[str]:
        return ninja_log(self.build_dir)[self.before:]


def objects(outputs) -> set[str]:
    return {o for o in outputs if o.endswith(".o")}
