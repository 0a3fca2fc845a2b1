"""The committed SPDK scripts and BCC tool on Debian 13's tracers (bpftrace
0.23, BCC 0.31), as users of the current stable release run them: the
program and the tracer inside a Debian 13 root (tests/helpers/trixie.py).
The same files on Debian 12's tracers: test_bpftrace.py and test_bcc.py."""

from __future__ import annotations

import pytest

from helpers import REPO
from helpers.tracing import (
    Process, build_spdk_program, expected_lines, run_traced, tracer_lines, wait_attached,
)
from helpers.trixie import inside, install

SCRIPTS = REPO / "scripts" / "bpf" / "probegen"


@pytest.fixture(scope="module")
def root(trixie):
    return trixie


@pytest.fixture(scope="module")
def program(root, tmp_path_factory):
    return install(root, build_spdk_program(tmp_path_factory.mktemp("trixie")))[0]


def test_bpftrace_0_23_prints_what_spdk_passes_with_the_committed_script(root, program):
    script, = install(root, SCRIPTS / "all.bt")
    traced = Process(inside(root, program), stdin=True)
    traced.wait_line("READY")
    tracer = Process(inside(root, "bpftrace", "-p", traced.pid, script))
    try:
        wait_attached(traced.pid, (SCRIPTS / "all.bt").read_text())
        traced.send("go\n")
        traced.wait_line("DONE")
        expected = expected_lines(traced)
        tracer.wait_for(lambda lines: len(tracer_lines(lines)) >= len(expected), "every hit")
    finally:
        traced.kill()
        tracer.kill()
    tracer.drain()
    assert tracer_lines(tracer.lines) == expected, tracer.stderr


def test_bcc_0_31_prints_what_spdk_passes_with_the_committed_tool(root, program):
    tool, = install(root, REPO / "scripts" / "bcc" / "spdk.py")
    traced, tracers = run_traced(inside(root, program), {"bcc": lambda pid: inside(root, "python3", tool, "-p", pid)})
    assert tracer_lines(tracers["bcc"].lines) == expected_lines(traced), tracers["bcc"].stderr
