"""Writing generated files: atomic, unchanged files untouched, stable bytes,
and `probegen check` catching stale committed files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from probegen.catalog import load_catalog
from probegen.generators import render_outputs
from probegen.files.output import GeneratedFile, UnwritableOutput, write_if_changed

REPO = Path(__file__).parent.parent


def cli(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "probegen", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


@pytest.fixture
def project(tmp_path) -> Path:
    """A copy of the default catalog in a fresh directory."""
    shutil.copy(REPO / "probes.yaml", tmp_path / "probes.yaml")
    return tmp_path


def test_unchanged_file_is_not_rewritten(tmp_path):
    target = tmp_path / "out.h"
    assert write_if_changed(GeneratedFile(target, "one\n"))
    os.utime(target, (1_000_000, 1_000_000))
    assert not write_if_changed(GeneratedFile(target, "one\n"))
    assert target.stat().st_mtime == 1_000_000
    assert write_if_changed(GeneratedFile(target, "two\n"))
    assert target.read_text() == "two\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.h"]  # no temporary left behind


def test_failed_write_leaves_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "out.h"
    write_if_changed(GeneratedFile(target, "old\n"))

    def broken_replace(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(UnwritableOutput, match="disk full"):
        write_if_changed(GeneratedFile(target, "new\n"))
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.h"]


def test_generate_from_any_directory_is_stable(project, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    first = cli("generate", "--catalog", project / "probes.yaml", cwd=elsewhere)
    assert first.returncode == 0, first.stderr
    header = project / "include" / "spdk_internal" / "usdt.h"
    content = header.read_bytes()
    os.utime(header, (1_000_000, 1_000_000))
    # Touching the catalog without changing it rewrites nothing.
    os.utime(project / "probes.yaml")
    again = cli("generate", "--catalog", project / "probes.yaml", cwd=elsewhere)
    assert again.returncode == 0 and "unchanged" in again.stdout
    assert header.read_bytes() == content and header.stat().st_mtime == 1_000_000
    # Byte for byte what the library renders, and what is committed.
    assert content == (REPO / "include" / "spdk_internal" / "usdt.h").read_bytes()


def test_header_command_writes_where_asked(project):
    result = cli("header", "--catalog", "probes.yaml", "-o", "include/spdk_internal/usdt.h", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "#define SPDK_DTRACE_PROBE4_TICKS(name, a1, a2, a3, a4)" in (
        project / "include" / "spdk_internal" / "usdt.h").read_text()
    stdout = cli("header", "-o", "-", cwd=project)
    assert stdout.stdout == (project / "include" / "spdk_internal" / "usdt.h").read_text()


def test_check_names_stale_files(project):
    assert cli("generate", cwd=project).returncode == 0
    fresh = cli("check", cwd=project)
    assert fresh.returncode == 0, fresh.stderr
    catalog = project / "probes.yaml"
    catalog.write_text(catalog.read_text().replace("A reactor runs an event's function.", "Changed doc."))
    stale = cli("check", cwd=project)
    assert stale.returncode == 1
    assert "include/spdk_internal/usdt.h: stale" in stale.stderr


def test_committed_outputs_match_the_default_catalog():
    """What CI's `probegen check` guards: the committed files are current."""
    catalog = load_catalog(REPO / "probes.yaml")
    for file in render_outputs(catalog):
        assert file.path.read_bytes() == file.data, f"{file.path} is stale: run probegen generate"


def test_help_for_every_command():
    from probegen.cli import COMMANDS
    result = cli("--help", cwd=REPO)
    assert result.returncode == 0
    for name in COMMANDS:
        assert name in result.stdout
        sub = cli(name, "--help", cwd=REPO)
        assert sub.returncode == 0 and f"usage: probegen {name}" in sub.stdout


def test_installed_entry_point_runs_outside_the_source_tree(tmp_path):
    probegen = shutil.which("probegen", path=str(Path(sys.executable).parent))
    assert probegen, "the probegen console script is not installed next to this Python"
    shutil.copy(REPO / "probes.yaml", tmp_path / "probes.yaml")
    result = subprocess.run([probegen, "header", "-o", "-"], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0 and "#ifndef SPDK_INTERNAL_USDT_H" in result.stdout


def test_no_command_is_a_usage_error():
    result = cli(cwd=REPO)
    assert result.returncode == 2 and "usage:" in result.stderr


def test_header_rerun_restores_outputs_and_follows_edits(project):
    """A rerun rewrites a hand-edited or deleted output and follows an
    edited catalog."""
    env = dict(os.environ)
    header = project / "out.h"

    def header_cmd():
        result = subprocess.run([sys.executable, "-m", "probegen", "header", "-o", "out.h"], cwd=project,
                                env=env, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return header.read_text()

    original = header_cmd()
    header.write_text("edited by hand\n")
    assert header_cmd() == original
    header.unlink()
    assert header_cmd() == original
    catalog = project / "probes.yaml"
    catalog.write_text(catalog.read_text().replace("A reactor runs an event's function.", "New doc."))
    assert "New doc." in header_cmd()
