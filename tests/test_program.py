"""probegen as a program: no cyclic collection while a command runs, what
it built frozen at the end; as a library, collection is left alone. And
the commands that read binaries start without YAML, jinja2 or DWARF code."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

from helpers.pgtest import build_pgtest, write_pgtest
from probegen.catalog import load_catalog
from probegen.cli import main
from probegen.generators.header import render_header

REPO = Path(__file__).resolve().parent.parent


def test_program_runs_without_collection_and_freezes_at_the_end(tmp_path):
    output = tmp_path / "usdt.h"
    script = (
        "import gc, sys\n"
        "from probegen.cli import main\n"
        f"sys.argv = ['probegen', 'header', '-c', {str(REPO / 'probes.yaml')!r}, '-o', {str(output)!r}]\n"
        "code = main()\n"
        "print(code, gc.isenabled(), gc.get_freeze_count() > 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "False", "True"]
    assert output.read_text() == render_header(load_catalog(REPO / "probes.yaml"))


def test_library_call_leaves_collection_alone(tmp_path):
    frozen = gc.get_freeze_count()
    assert main(["header", "-c", str(REPO / "probes.yaml"), "-o", str(tmp_path / "usdt.h")]) == 0
    assert gc.isenabled() and gc.get_freeze_count() == frozen


IMPORTS = """
import sys
from probegen.cli import main
code = main(sys.argv[1:])
heavy = sorted({m.split(".")[0] if not m.startswith("probegen") else ".".join(m.split(".")[:2])
                for m in sys.modules} & {"yaml", "jinja2", "probegen.dwarf", "probegen.generators.render",
                                         "probegen.generators", "probegen.checks.lint"})
print(code, ",".join(heavy))
"""


def imported(*argv) -> tuple[int, set[str]]:
    out = subprocess.run([sys.executable, "-c", IMPORTS, *argv], check=True,
                         capture_output=True, text=True).stdout.splitlines()[-1]
    code, heavy = out.split(" ", 1) if " " in out else (out, "")
    return int(code), set(filter(None, heavy.split(",")))


def test_verify_and_list_import_no_jinja2_or_dwarf_code(tmp_path):
    catalog = write_pgtest(tmp_path / "src")
    binary = build_pgtest("x86_64", tmp_path, "good")
    assert imported("verify", "-c", str(catalog), str(binary)) == (0, {"yaml"})
    assert imported("list", str(binary)) == (0, set())


def program(*argv: str, **streams) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "probegen", *argv], text=True, timeout=60, cwd=REPO, **streams)


def test_stdout_on_a_full_device_is_one_line():
    with open("/dev/full", "w") as full:
        for argv in (["schema"], ["paths"], ["header", "-o", "-"]):
            result = program(*argv, stdout=full, stderr=subprocess.PIPE)
            assert result.returncode == 2, result.stderr
            assert result.stderr == f"probegen {argv[0]}: error: cannot write to stdout: No space left on device\n"


def test_closed_stdout_or_stderr_is_no_traceback(tmp_path):
    # Python leaves sys.stdout None; and print(file=None) would put the error on stdout.
    result = program("schema", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     preexec_fn=lambda: os.close(1))
    assert (result.returncode, result.stderr) == (0, "")
    result = program("structs", "/no/such/binary", "-t", "x", stdout=subprocess.PIPE, preexec_fn=lambda: os.close(2))
    assert (result.returncode, result.stdout) == (2, "")
    result = program("header", "-o", str(tmp_path / "usdt.h"), stdout=subprocess.PIPE,
                     preexec_fn=lambda: os.close(1))
    assert result.returncode == 0 and (tmp_path / "usdt.h").read_text().startswith("/*")
