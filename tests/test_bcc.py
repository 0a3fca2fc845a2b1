"""Generated BCC tools, run for real with /usr/bin/python3 against programs
firing every probe with known values."""

from __future__ import annotations

import signal
import stat
import subprocess

import pytest

from probegen.catalog import load_catalog
from probegen.generators import bcc
from probegen.files.output import write_all
from helpers import CATALOGS, C_DIR, SYSTEM_PYTHON
from helpers.tracing import Process, build_program, expected_lines, require_bcc, run_traced, tracer_lines

TYPES = CATALOGS / "tracing_types.yaml"


@pytest.fixture(scope="module")
def types_run(tmp_path_factory):
    require_bcc()
    directory = tmp_path_factory.mktemp("bcc_types")
    catalog = load_catalog(TYPES)
    tools = directory / "tools"
    write_all(bcc.render_files(catalog, tools))
    binary = build_program(C_DIR / "tracing_types.c", TYPES, "tracing_types.h", directory, defines=["PGTEST_USDT"])
    groups = {g: {p.name for p in catalog.probes_in(g)} for g in catalog.groups}

    def count(name, expected):
        probes = groups.get(name)
        return sum(1 for e in expected if probes is None or e.split()[0] in probes)

    program, tracers = run_traced([binary], {
        "all": lambda pid: [SYSTEM_PYTHON, tools / "all.py", "-p", pid],
        "ints": lambda pid: [SYSTEM_PYTHON, tools / "ints.py", "-p", pid],
        "misc": lambda pid: [SYSTEM_PYTHON, tools / "misc.py", "-p", pid, binary],
        "big": lambda pid: [SYSTEM_PYTHON, tools / "big.py", "-p", pid],
    }, count_done=count)
    return catalog, tools, binary, program, tracers, groups


def test_every_value_printed_by_all_tool(types_run):
    _, _, _, program, tracers, _ = types_run
    assert tracer_lines(tracers["all"].lines) == expected_lines(program)
    assert "Tracing 10 probes (all). Hit Ctrl-C to end." in tracers["all"].lines
    assert tracers["all"].proc.returncode == 0


def test_group_tools_print_their_probes(types_run):
    _, _, _, program, tracers, groups = types_run
    for group in ("ints", "misc", "big"):
        expected = [e for e in expected_lines(program) if e.split()[0] in groups[group]]
        assert tracer_lines(tracers[group].lines) == expected, group
        assert tracers[group].proc.returncode == 0


def test_tools_are_executable_python_for_system_python(types_run):
    _, tools, *_ = types_run
    for path in tools.iterdir():
        assert path.read_text().startswith("#!/usr/bin/python3\n")
        assert path.stat().st_mode & stat.S_IXUSR


def test_duration_and_sigterm_end_cleanly(types_run):
    _, tools, binary, *_ = types_run
    sleeper = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        timed = subprocess.run([SYSTEM_PYTHON, tools / "big.py", "-p", str(sleeper.pid), "--duration", "0.5"],
                               capture_output=True, text=True, timeout=120)
        assert timed.returncode == 0, timed.stderr
        assert "Tracing 1 probe (big). Hit Ctrl-C to end." in timed.stdout
        tool = Process([SYSTEM_PYTHON, tools / "big.py", "-p", sleeper.pid])
        tool.wait_line("Tracing ")
        assert tool.stop(signal.SIGTERM) == 0
        tool.drain()
        assert not any("Traceback" in line for line in tool.stderr), "\n".join(tool.stderr)
    finally:
        sleeper.kill()
        sleeper.wait()
    # BCC 0.26 enables semaphore-guarded probes only in a running process
    alone = subprocess.run([SYSTEM_PYTHON, tools / "big.py", binary], capture_output=True, text=True, timeout=120)
    assert alone.returncode == 2 and "give -p PID" in alone.stderr and "Traceback" not in alone.stderr


def test_bad_pid_is_a_clear_error(types_run):
    _, tools, *_ = types_run
    result = subprocess.run([SYSTEM_PYTHON, tools / "big.py", "-p", "999999999"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "error:" in result.stderr and "Traceback" not in result.stderr
    usage = subprocess.run([SYSTEM_PYTHON, tools / "big.py"], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and "give -p PID or a BINARY" in usage.stderr


def test_generation_is_deterministic(tmp_path):
    first = bcc.render_files(load_catalog(TYPES), tmp_path)
    again = bcc.render_files(load_catalog(TYPES), tmp_path)
    assert [(f.path, f.text) for f in first] == [(f.path, f.text) for f in again]
    assert sorted(f.path.name for f in first) == ["all.py", "big.py", "ints.py", "misc.py"]


def test_spdk_catalog_tool_prints_what_spdk_passes(tmp_path):
    """The default SPDK catalog's all.py against a program firing SPDK's
    probes as SPDK's sources do (untyped SPDK_DTRACE_PROBEn macros)."""
    from helpers.tracing import SPDK_CATALOG, build_spdk_program

    require_bcc()
    catalog = load_catalog(SPDK_CATALOG)
    tools = tmp_path / "bcc"
    write_all(bcc.render_files(catalog, tools))
    binary = build_spdk_program(tmp_path)
    program, tracers = run_traced([binary], {"all": lambda pid: [SYSTEM_PYTHON, tools / "all.py", "-p", pid]})
    expected = expected_lines(program)
    assert {e.split()[0] for e in expected} == {p.name for p in catalog.probes}
    assert tracer_lines(tracers["all"].lines) == expected
