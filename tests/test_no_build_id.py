"""A binary with probes and debug info but no GNU build id (issue 23,
item 3): gcc -Wl,--build-id=none. Its probe note has type 3, as a build id
note does; taken for one, it ended trace, verify, lint --binary and
bpftrace --binary in a traceback. Each must now give its normal result."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import C_DIR, compile_c
from helpers.drift import DRIFT_CATALOG
from helpers.tracing import Process
from probegen.catalog import load_catalog
from probegen.generators.header import render_header


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    directory = tmp_path_factory.mktemp("nobid")
    (directory / "include").mkdir()
    (directory / "include" / "drift.h").write_text(render_header(load_catalog(DRIFT_CATALOG)))
    built = compile_c([C_DIR / "drift_spdk.c"], directory / "nobid", include_dirs=[directory / "include"],
                      defines=["PGDRIFT_USDT"], extra=["-g", "-Wl,--build-id=none"])
    notes = subprocess.run(["readelf", "-n", built], capture_output=True, text=True, check=True).stdout
    assert "stapsdt" in notes and "NT_GNU_BUILD_ID" not in notes
    return built


def probegen(*args, cwd) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "probegen", *map(str, args)], capture_output=True,
                            text=True, cwd=cwd, timeout=120)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_verify_bpftrace_and_lint_read_its_debug_info(binary, tmp_path):
    verify = probegen("verify", "-c", DRIFT_CATALOG, binary, cwd=tmp_path)
    assert verify.returncode == 0 and "1 enum and 2 member paths checked" in verify.stdout, verify.stdout
    scripts = probegen("bpftrace", "-c", DRIFT_CATALOG, "--binary", binary, "-o", tmp_path / "bt", cwd=tmp_path)
    assert scripts.returncode == 0, scripts.stderr
    lint = probegen("lint", "-c", DRIFT_CATALOG, "--binary", binary, *sorted((tmp_path / "bt").glob("*.bt")),
                    cwd=tmp_path)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_trace_names_enums_from_its_debug_info(binary, tmp_path):
    assert probegen("bpftrace", "-c", DRIFT_CATALOG, "--binary", binary, "-o", tmp_path, cwd=tmp_path).returncode == 0
    program = Process([binary], stdin=True)
    try:
        program.wait_line("READY")
        result = probegen("trace", "-c", DRIFT_CATALOG, program.pid, tmp_path / "tgt.bt", "--dry-run", cwd=tmp_path)
    finally:
        program.kill()
    assert result.returncode == 0, result.stderr
    assert f"enum names from the debug info of '{binary}': nvmf_tgt_state" in result.stderr, result.stderr
