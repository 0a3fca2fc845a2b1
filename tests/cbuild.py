"""Compiling test programs with the real gcc and <sys/sdt.h>."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent
C_DIR = HERE / "c"
STUBS = C_DIR / "stubs"  # stand-ins for SPDK's spdk/env.h
REPO = HERE.parent
SDT_H = Path("/usr/include/x86_64-linux-gnu/sys/sdt.h")
WARNINGS = ["-Wall", "-Wextra", "-Werror"]


def require(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} not found (install the Debian package {package})")
    return path


def require_sdt() -> None:
    if not SDT_H.exists() and not Path("/usr/include/sys/sdt.h").exists():
        pytest.skip("<sys/sdt.h> not found (install the Debian package systemtap-sdt-dev)")


def spdk_config(directory: Path, usdt: bool) -> Path:
    """A directory holding spdk/config.h as SPDK's configure writes it."""
    (directory / "spdk").mkdir(parents=True, exist_ok=True)
    (directory / "spdk" / "config.h").write_text("#define SPDK_CONFIG_USDT 1\n" if usdt else "/* USDT off */\n")
    return directory


def compile_c(sources, output: Path, *, include_dirs=(), defines=(), cxx=False,
              std=None, compiler=None, extra=(), link=True) -> Path:
    """Compile with warnings as errors; fail the test with the compiler's output."""
    compiler = compiler or ("g++" if cxx else "gcc")
    require(compiler, "g++" if cxx else "gcc")
    require_sdt()
    command = [compiler, *WARNINGS, "-O2", f"-std={std or ('c++17' if cxx else 'c11')}"]
    if cxx:
        command += ["-x", "c++"]
    command += [f"-I{d}" for d in include_dirs] + [f"-D{d}" for d in defines] + list(extra)
    command += [str(s) for s in sources] + (["-o", str(output)] if link else ["-c", "-o", str(output)])
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"compile failed: {' '.join(command)}\n{result.stderr}")
    return output


def try_compile(sources, output: Path, **kwargs) -> subprocess.CompletedProcess:
    """Like compile_c, but return the result instead of failing on errors."""
    try:
        compile_c(sources, output, **kwargs)
    except AssertionError as exc:
        return subprocess.CompletedProcess([], 1, "", str(exc))
    return subprocess.CompletedProcess([], 0, "", "")


def readelf_probes(binary: Path) -> list[dict]:
    """Probes as binutils' readelf -n lists them (the reference), with the
    arguments split into specs."""
    from elf_helpers import readelf_notes

    return [
        {"provider": n["provider"], "name": n["name"], "pc": n["address"], "base": n["base"],
         "semaphore": n["semaphore"], "args": n["args"].split()}
        for n in readelf_notes(binary)
    ]
