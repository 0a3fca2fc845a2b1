"""Helpers for the ELF, verify and import tests: building test binaries
with gcc and the Debian cross compilers, and reading `readelf -n`."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent
C_DIR = HERE / "c"
REPO = HERE.parent

# Real binaries with USDT notes that no one here wrote (see ENVIRONMENT.md).
LIBJVM = Path("/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so")
LIBSTDCXX = Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")
PYTHON311 = Path("/usr/bin/python3.11")

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


def require_file(path: Path, package: str) -> Path:
    if not path.exists():
        pytest.skip(f"{path} not found (install the Debian package {package})")
    return path


def require_tool(tool: str, package: str) -> str:
    found = shutil.which(tool)
    if found is None:
        pytest.skip(f"{tool} not found (install the Debian package {package})")
    return found


def sdt_include_dir(directory: Path) -> Path:
    """A directory holding only sys/sdt.h (and sdt-config.h), so cross
    compilers get the real header without the host's other headers."""
    candidates = [Path("/usr/include/x86_64-linux-gnu/sys"), Path("/usr/include/sys")]
    source = next((d for d in candidates if (d / "sdt.h").exists()), None)
    if source is None:
        pytest.skip("<sys/sdt.h> not found (install the Debian package systemtap-sdt-dev)")
    target = directory / "sys"
    target.mkdir(parents=True, exist_ok=True)
    for name in ("sdt.h", "sdt-config.h"):
        if (source / name).exists():
            shutil.copy(source / name, target / name)
    return directory


def compile_c(arch: str, sources, output: Path, *, includes=(), defines=(), flags=(), libs=()) -> Path:
    compiler, package = COMPILERS[arch]
    require_tool(compiler, package)
    command = [compiler, "-O2", "-g0", "-Wall", "-Werror", *flags]
    command += [f"-I{d}" for d in includes] + [f"-D{d}" for d in defines]
    command += [str(s) for s in sources] + list(libs) + ["-o", str(output)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed:\n{result.stderr}")
    return output


_NOTE = re.compile(
    r"^\s+stapsdt\s+0x[0-9a-f]+\s+NT_STAPSDT[^\n]*?\)\s+Provider: (?P<provider>.*)\n"
    r"\s+Name: (?P<name>.*)\n"
    r"\s+Location: 0x(?P<location>[0-9a-f]+), Base: 0x(?P<base>[0-9a-f]+), Semaphore: 0x(?P<semaphore>[0-9a-f]+)\n"
    r"\s+Arguments: ?(?P<args>.*)$",
    re.M,
)


def readelf_notes(path: Path) -> list[dict]:
    """Every stapsdt note as binutils' readelf -n shows it, in file order."""
    require_tool("readelf", "binutils")
    out = subprocess.run(["readelf", "-n", "-W", str(path)], capture_output=True, text=True, check=True).stdout
    return [
        {
            "provider": m["provider"], "name": m["name"],
            "address": int(m["location"], 16), "base": int(m["base"], 16),
            "semaphore": int(m["semaphore"], 16), "args": m["args"].rstrip(),
        }
        for m in _NOTE.finditer(out)
    ]


def note_count(path: Path) -> int:
    out = subprocess.run(["readelf", "-n", "-W", str(path)], capture_output=True, text=True, check=True).stdout
    return out.count("NT_STAPSDT")


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """probegen's main() in this process: (exit code, stdout, stderr)."""
    from probegen.cli import main

    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# The catalog of tests/c/elf_verify.c, SPDK-shaped: arg0, a ticks probe,
# untyped compat macros and typed ones.
PGTEST_CATALOG = """\
provider: pgtest
arg0: true
header:
  guard: PGTEST_USDT_H
  enable_macro: PGTEST_USDT
  compat_prefix: PGTEST_DTRACE_PROBE
  typed_prefix: PGTEST_PROBE
  clock: pg_ticks()
  includes: [pgtest_clock.h]
probes:
  - name: qpair_add
    group: nvmf
    doc: A queue pair joins a poll group.
    ticks: true
    args:
      - {name: qpair, type: struct qp *}
      - {name: qid, type: uint16_t}
  - name: state_change
    group: nvmf
    doc: A subsystem changes state.
    args:
      - {name: name, type: const char *}
      - {name: state, type: int}
      - {name: flags, type: uint32_t, hex: true}
  - name: tick
    group: misc
    doc: A probe with no arguments of its own.
"""


def write_pgtest(directory: Path, semaphores: bool = True) -> Path:
    """The test catalog and its generated header in ``directory``;
    returns the catalog path."""
    from probegen.catalog import load_catalog
    from probegen.generators.header import render_header

    directory.mkdir(parents=True, exist_ok=True)
    text = PGTEST_CATALOG if semaphores else PGTEST_CATALOG.replace("  clock:", "  semaphores: false\n  clock:")
    catalog_path = directory / "probes.yaml"
    catalog_path.write_text(text)
    (directory / "pgtest_clock.h").write_text("#include <stdint.h>\nuint64_t pg_ticks(void);\n")
    (directory / "pgtest_usdt.h").write_text(render_header(load_catalog(catalog_path)))
    return catalog_path


def build_pgtest(arch: str, directory: Path, name: str, *defines, usdt: bool = True,
                 semaphores: bool = True, sdt: Path | None = None) -> Path:
    """tests/c/elf_verify.c built against the generated header."""
    src_dir = directory / ("src" if semaphores else "src-nosem")
    if not (src_dir / "probes.yaml").exists():
        write_pgtest(src_dir, semaphores)
    includes = [src_dir] + ([sdt] if sdt else [])
    return compile_c(arch, [C_DIR / "elf_verify.c"], directory / name, includes=includes,
                     defines=(["PGTEST_USDT"] if usdt else []) + list(defines))


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing needle."""
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in text")
