"""Test helpers: the one place for finding tools, compiling C and reading ELF.

Import them by the name ``helpers`` (pyproject's pytest ``pythonpath``
puts tests/ on sys.path, so a bare ``pytest``, ``python -m pytest`` and a
run from an unpacked sdist all find them)::

    from helpers import compile_c, require, REPO
    from helpers.tracing import Process, run_traced

This module (tools, paths, compiling, readelf, the CLI in-process):

- paths: ``REPO``, ``TESTS``, ``C_DIR`` (tests/c), ``STUBS`` (stand-ins for
  SPDK's spdk/env.h), ``CATALOGS`` (tests/catalogs), ``EXAMPLES``,
  ``VENV_BIN`` (this Python's bin: meson, ninja, probegen), ``SYSTEM_PYTHON``
  (/usr/bin/python3, where BCC imports); real binaries with USDT notes
  nobody here wrote: ``LIBJVM``, ``LIBSTDCXX``, ``PYTHON311``.
- skips naming what is missing: ``require(tool, package)`` (Debian package;
  ``pip=`` for a PyPI one) returns the tool's path; ``require_file(path,
  package)``, ``require_sdt()``, ``require_root()``.
- compiling (warnings are errors; a failure fails the test with the
  compiler's output): ``compile_c(sources, output, include_dirs=,
  defines=, cxx=, std=, compiler=, extra=, link=)`` with gcc/g++ and
  <sys/sdt.h>; ``try_compile(...)`` returns the result instead;
  ``compile_for(arch, sources, output, include_dirs=, defines=, extra=,
  libs=)`` with gcc or a Debian cross compiler (``COMPILERS``);
  ``run_compiler(command, check=)`` for a raw command line;
  ``sdt_include_dir(directory)`` (only sys/sdt.h, for cross compilers);
  ``spdk_config(directory, usdt)`` (spdk/config.h as SPDK's configure writes).
- reading ELF with binutils (the reference): ``readelf_notes(path)``
  (dicts: provider, name, address, base, semaphore, args),
  ``readelf_probes(binary)`` (args split, address as pc), ``note_count``,
  ``usdt_probes(binary)`` ({(provider, name)}).
- ``run_cli(capsys, *argv)``: probegen's main() here -> (code, out, err);
  ``build_env()``: os.environ with this venv's bin first on PATH;
  ``line_of(text, needle)``; ``lines_run(call)``: (its result, the Python
  lines it ran), for tests that work grows linearly, not with the clock.

Topic modules: ``helpers.pgtest`` (the pgtest catalog and elf_verify.c
built against its header), ``helpers.builds`` (example projects with make,
meson, CMake), ``helpers.dwarf`` (struct layouts vs gcc and pahole, bpftrace
on a struct), ``helpers.tracing`` (real bpftrace/BCC against test programs),
``helpers.hostile`` (outputs of hostile catalogs checked with real tools),
``helpers.debian`` (real Debian binaries of every architecture).

Fixtures (tests/conftest.py): ``cli`` (``cli(*argv)`` -> (code, out, err)),
``sdt_dir`` (a session directory holding only sys/sdt.h).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
C_DIR = TESTS / "c"
STUBS = C_DIR / "stubs"
CATALOGS = TESTS / "catalogs"
EXAMPLES = REPO / "examples"
VENV_BIN = Path(sys.executable).parent
SYSTEM_PYTHON = "/usr/bin/python3"

LIBJVM = Path("/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so")
LIBSTDCXX = Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")
PYTHON311 = Path("/usr/bin/python3.11")

SDT_DIRS = (Path("/usr/include/x86_64-linux-gnu/sys"), Path("/usr/include/sys"))
WARNINGS = ["-Wall", "-Wextra", "-Werror"]

# Debian architecture-ish name -> (compiler, Debian package).
COMPILERS = {
    "x86_64": ("gcc", "gcc"),
    "aarch64": ("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu"),
    "i686": ("i686-linux-gnu-gcc", "gcc-i686-linux-gnu"),
    "armhf": ("arm-linux-gnueabihf-gcc", "gcc-arm-linux-gnueabihf"),
    "s390x": ("s390x-linux-gnu-gcc", "gcc-s390x-linux-gnu"),
    "ppc64el": ("powerpc64le-linux-gnu-gcc", "gcc-powerpc64le-linux-gnu"),
    "mips64el": ("mips64el-linux-gnuabi64-gcc", "gcc-mips64el-linux-gnuabi64"),
    "riscv64": ("riscv64-linux-gnu-gcc", "gcc-riscv64-linux-gnu"),
}


# ---- property tests ----------------------------------------------------------

EXPLORING = os.environ.get("HYPOTHESIS_PROFILE") == "explore"


def examples(count: int) -> int:
    """A property test's number of examples: ten times more when exploring
    (tools/test.sh --explore), the committed count when replaying in CI."""
    return count * 10 if EXPLORING else count


# ---- what the machine has ------------------------------------------------------


def build_env() -> dict[str, str]:
    """The environment tools run in: this venv's probegen, meson and ninja first."""
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("MAKEFLAGS", None)  # a parent make's flags must not leak in
    return env


def require(tool: str, package: str | None = None, *, pip: str | None = None) -> str:
    """The tool's path (this venv's bin first), or skip naming how to get it."""
    path = shutil.which(tool, path=build_env()["PATH"])
    if path is None:
        how = f"pip install {pip}" if pip else f"install the Debian package {package or tool}"
        pytest.skip(f"{tool} not found ({how})")
    return path


def require_file(path: Path, package: str) -> Path:
    if not path.exists():
        pytest.skip(f"{path} not found (install the Debian package {package})")
    return path


def require_sdt() -> Path:
    """The directory holding sys/sdt.h's sdt.h."""
    found = next((d for d in SDT_DIRS if (d / "sdt.h").exists()), None)
    if found is None:
        pytest.skip("<sys/sdt.h> not found (install the Debian package systemtap-sdt-dev)")
    return found


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("tracing needs root (bpftrace and BCC attach uprobes)")


def require_bpftrace() -> str:
    require_root()
    return require("bpftrace", "bpftrace")


def sdt_include_dir(directory: Path) -> Path:
    """A directory holding only sys/sdt.h (and sdt-config.h), so cross
    compilers get the real header without the host's other headers."""
    source = require_sdt()
    target = directory / "sys"
    target.mkdir(parents=True, exist_ok=True)
    for name in ("sdt.h", "sdt-config.h"):
        if (source / name).exists():
            shutil.copy(source / name, target / name)
    return directory


def spdk_config(directory: Path, usdt: bool) -> Path:
    """A directory holding spdk/config.h as SPDK's configure writes it."""
    (directory / "spdk").mkdir(parents=True, exist_ok=True)
    (directory / "spdk" / "config.h").write_text("#define SPDK_CONFIG_USDT 1\n" if usdt else "/* USDT off */\n")
    return directory


# ---- compiling -------------------------------------------------------------------


def run_compiler(command, *, check: bool = True) -> subprocess.CompletedProcess:
    """Run a compiler command line; with check, fail the test with its output."""
    command = [str(c) for c in command]
    result = subprocess.run(command, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"compile failed: {' '.join(command)}\n{result.stderr}")
    return result


def compile_c(sources, output: Path, *, include_dirs=(), defines=(), cxx=False,
              std=None, compiler=None, extra=(), link=True) -> Path:
    """gcc (g++ with cxx) against <sys/sdt.h>, warnings as errors."""
    compiler = compiler or ("g++" if cxx else "gcc")
    require(compiler, "g++" if cxx else "gcc")
    require_sdt()
    command = [compiler, *WARNINGS, "-O2", f"-std={std or ('c++17' if cxx else 'c11')}"]
    if cxx:
        command += ["-x", "c++"]
    command += [f"-I{d}" for d in include_dirs] + [f"-D{d}" for d in defines] + list(extra)
    command += list(sources) + (["-o", output] if link else ["-c", "-o", output])
    run_compiler(command)
    return output


def try_compile(sources, output: Path, **kwargs) -> subprocess.CompletedProcess:
    """Like compile_c, but return the result instead of failing on errors."""
    try:
        compile_c(sources, output, **kwargs)
    except AssertionError as exc:
        return subprocess.CompletedProcess([], 1, "", str(exc))
    return subprocess.CompletedProcess([], 0, "", "")


def compile_for(arch: str, sources, output: Path, *, include_dirs=(), defines=(), extra=(), libs=()) -> Path:
    """The compiler of ``arch`` (COMPILERS), GNU C, no debug info; pass
    sdt_include_dir() in include_dirs for a cross compiler."""
    compiler, package = COMPILERS[arch]
    require(compiler, package)
    command = [compiler, "-O2", "-g0", "-Wall", "-Werror", *extra]
    command += [f"-I{d}" for d in include_dirs] + [f"-D{d}" for d in defines]
    command += [*sources, *libs, "-o", output]
    run_compiler(command)
    return output


# ---- reading ELF with binutils -------------------------------------------------------

_NOTE = re.compile(
    r"^\s+stapsdt\s+0x[0-9a-f]+\s+NT_STAPSDT[^\n]*?\)\s+Provider: (?P<provider>.*)\n"
    r"\s+Name: (?P<name>.*)\n"
    r"\s+Location: 0x(?P<location>[0-9a-f]+), Base: 0x(?P<base>[0-9a-f]+), Semaphore: 0x(?P<semaphore>[0-9a-f]+)\n"
    r"\s+Arguments: ?(?P<args>.*)$",
    re.M,
)


def _readelf_n(path: Path) -> str:
    readelf = require("readelf", "binutils")
    return subprocess.run([readelf, "-n", "-W", str(path)], capture_output=True, text=True, check=True).stdout


def readelf_notes(path: Path) -> list[dict]:
    """Every stapsdt note as binutils' readelf -n shows it, in file order."""
    return [
        {
            "provider": m["provider"], "name": m["name"],
            "address": int(m["location"], 16), "base": int(m["base"], 16),
            "semaphore": int(m["semaphore"], 16), "args": m["args"].rstrip(),
        }
        for m in _NOTE.finditer(_readelf_n(path))
    ]


def readelf_probes(binary: Path) -> list[dict]:
    """readelf_notes with the arguments split into specs and the address as pc."""
    return [
        {"provider": n["provider"], "name": n["name"], "pc": n["address"], "base": n["base"],
         "semaphore": n["semaphore"], "args": n["args"].split()}
        for n in readelf_notes(binary)
    ]


def note_count(path: Path) -> int:
    return _readelf_n(path).count("NT_STAPSDT")


def usdt_probes(binary: Path) -> set[tuple[str, str]]:
    """(provider, name) of every USDT note in the binary."""
    return {(n["provider"], n["name"]) for n in readelf_notes(binary)}


# ---- probegen itself -------------------------------------------------------------------


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """probegen's main() in this process: (exit code, stdout, stderr)."""
    from probegen.cli import main

    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing needle."""
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in text")


def lines_run(call):
    """(``call()``, the number of Python lines it ran, in every frame it entered)."""
    ran = 0

    def count_lines(frame, event, arg):
        nonlocal ran
        ran += event == "line"
        return count_lines

    sys.settrace(count_lines)
    try:
        return call(), ran
    finally:
        sys.settrace(None)
