"""Building the example projects for real: meson and ninja from PyPI (the
ones next to this Python), GNU make, gcc, <sys/sdt.h>, readelf.

Examples are copied into a temporary directory and built there, never in
the repository.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
VENV_BIN = Path(sys.executable).parent  # meson, ninja and probegen live here
SDT_HEADERS = (Path("/usr/include/sys/sdt.h"), Path("/usr/include/x86_64-linux-gnu/sys/sdt.h"))


def require(tool: str, where: str) -> str:
    path = shutil.which(tool, path=build_env()["PATH"])
    if path is None:
        pytest.skip(f"{tool} not found ({where})")
    return path


def require_sdt() -> None:
    if not any(p.exists() for p in SDT_HEADERS):
        pytest.skip("<sys/sdt.h> not found (install the Debian package systemtap-sdt-dev)")


def build_env() -> dict[str, str]:
    """The environment builds run in: this venv's probegen, meson and ninja first."""
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("MAKEFLAGS", None)  # a parent make's flags must not leak in
    return env


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


_NOTE_PROBE = re.compile(r"Provider: (\S+)\s+Name: (\S+)")


def usdt_probes(binary: Path) -> set[tuple[str, str]]:
    """(provider, name) of every USDT note in the binary, read by binutils."""
    readelf = require("readelf", "install binutils")
    out = subprocess.run([readelf, "-n", str(binary)], capture_output=True, text=True, check=True).stdout
    return set(_NOTE_PROBE.findall(out))


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
