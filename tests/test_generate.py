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
from probegen.catalog.schema_check import load_schema
from probegen.generators import outputs, render_outputs
from probegen.files.marker import has_marker
from probegen.files.output import GeneratedFile, UnwritableOutput, write_if_changed

REPO = Path(__file__).parent.parent


def cli(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "probegen", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


def test_schema_outputs_are_the_generators():
    """An output is one generator module; the schema (what editors and the
    loader read) names the same kinds, the same ones as directories."""
    schema = load_schema()["properties"]["outputs"]["properties"]
    assert {kind: bool(entry.get("x-directory")) for kind, entry in schema.items()} == {
        kind: module.WRITES_DIRECTORY for kind, module in outputs().items()}


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


def test_a_big_file_is_current_only_if_every_byte_is(tmp_path):
    """Compared a megabyte at a time: a byte changed past the first megabyte,
    or a file of other length, is rewritten; the same bytes are not."""
    target, text = tmp_path / "big.h", "x" * (3 << 20) + "end\n"
    assert write_if_changed(GeneratedFile(target, text))
    assert not write_if_changed(GeneratedFile(target, text))
    for on_disk in (text[:-2] + "D\n", text + "more", text[:-1]):
        target.write_text(on_disk)
        assert write_if_changed(GeneratedFile(target, text))
        assert target.read_text() == text


def test_failed_write_leaves_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "out.h"
    write_if_changed(GeneratedFile(target, "old\n"))

    def broken_rename(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(os, "rename", broken_rename)
    with pytest.raises(UnwritableOutput, match="disk full"):
        write_if_changed(GeneratedFile(target, "new\n"))
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.h"]


def test_a_path_that_ends_in_a_directory_is_refused(tmp_path):
    (tmp_path / "sub").mkdir()
    with pytest.raises(UnwritableOutput, match="is a directory; not writing to it"):
        write_if_changed(GeneratedFile(tmp_path / "sub" / "..", "x\n"))
    assert [p.name for p in tmp_path.iterdir()] == ["sub"]


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


@pytest.mark.parametrize("command", ["header", "docs"])
def test_stamp_is_touched_when_writing_to_stdout_too(project, command):
    result = cli(command, "-o", "-", "--stamp", "done.stamp", cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout and (project / "done.stamp").exists()


def test_check_names_stale_files(project):
    assert cli("generate", cwd=project).returncode == 0
    fresh = cli("check", cwd=project)
    assert fresh.returncode == 0, fresh.stderr
    catalog = project / "probes.yaml"
    catalog.write_text(catalog.read_text().replace("A reactor runs an event's function.", "Changed doc."))
    stale = cli("check", cwd=project)
    assert stale.returncode == 1
    assert "include/spdk_internal/usdt.h: stale" in stale.stderr


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
    """A rerun rewrites a hand-edited (marker line kept) or deleted output
    and follows an edited catalog."""
    env = dict(os.environ)
    header = project / "out.h"

    def header_cmd():
        result = subprocess.run([sys.executable, "-m", "probegen", "header", "-o", "out.h"], cwd=project,
                                env=env, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return header.read_text()

    original = header_cmd()
    header.write_text(original.splitlines(keepends=True)[0] + "edited by hand\n")
    assert header_cmd() == original
    header.unlink()
    assert header_cmd() == original
    catalog = project / "probes.yaml"
    catalog.write_text(catalog.read_text().replace("A reactor runs an event's function.", "New doc."))
    assert "New doc." in header_cmd()


# --- Into an SPDK checkout: SPDK's own files are never replaced -------------------

# What an SPDK checkout holds where probes.yaml's outputs go: hand-written
# scripts (no marker line) and SPDK's own USDT header.
SPDK_FILES = {
    "scripts/bpf/nvmf.bt": "#!/usr/bin/env bpftrace\n// SPDK's hand-written nvmf script\n",
    "scripts/bpf/sched.bt": "usdt:__EXE__:spdk:event_exec { @n = count(); }\n",
    "scripts/bpf/gen.py": "#!/usr/bin/env python3\nprint('gen')\n",
    "include/spdk_internal/usdt.h": "/* SPDX-License-Identifier: BSD-3-Clause */\n#ifndef SPDK_INTERNAL_USDT_H\n#endif\n",
    "doc/usdt.md": "# User Space Dynamic Tracing {#usdt}\n",
}


@pytest.fixture
def spdk_checkout(project) -> Path:
    for name, text in SPDK_FILES.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    return project


def rendered(project: Path) -> list[GeneratedFile]:
    return render_outputs(load_catalog(project / "probes.yaml"))


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_generate_into_spdk_checkout_refuses_spdk_header_and_changes_nothing(spdk_checkout):
    before = tree(spdk_checkout)
    result = cli("generate", cwd=spdk_checkout)
    assert result.returncode == 2 and not result.stdout
    assert result.stderr.splitlines() == [
        "include/spdk_internal/usdt.h: error: not written by probegen (no '@generated by probegen: do not edit' "
        "line), not replacing it: give --force to let probegen take it over"]
    assert tree(spdk_checkout) == before  # refused before anything was written


def test_generate_force_takes_the_header_over_and_adds_scripts_beside_spdk_s(spdk_checkout):
    taken = cli("generate", "--force", cwd=spdk_checkout)
    assert taken.returncode == 0, taken.stderr
    files = tree(spdk_checkout)
    for name, text in SPDK_FILES.items():
        if name != "include/spdk_internal/usdt.h":
            assert files[name] == text.encode(), f"{name} was changed"
    assert files["include/spdk_internal/usdt.h"].startswith(b"/* @generated by probegen: do not edit */\n")
    assert "scripts/bpf/probegen/nvmf.bt" in files
    assert {str(f.path.relative_to(spdk_checkout)) for f in rendered(spdk_checkout)} <= set(files)
    # The header is probegen's now: later runs need no --force, and change nothing.
    again = cli("generate", cwd=spdk_checkout)
    assert again.returncode == 0, again.stderr
    assert set(again.stdout.split()[::2]) == {"unchanged"}
    assert tree(spdk_checkout) == files
    assert cli("check", cwd=spdk_checkout).returncode == 0


def first_script(kind: str, directory: str) -> str:
    from probegen.generators import bcc, bpftrace

    generator = {"bpftrace": bpftrace, "bcc": bcc}[kind]
    return str(Path(directory) / generator.render_files(load_catalog(REPO / "probes.yaml"), Path("x"))[0].path.name)


@pytest.mark.parametrize("command, written", [
    (["generate"], "scripts/bpf/probegen/nvmf.bt"),
    (["bpftrace"], "scripts/bpf/probegen/nvmf.bt"),
    (["bpftrace", "-o", "scripts/bpf"], "scripts/bpf/nvmf.bt"),  # SPDK's own, named on the command line
    (["bcc", "-o", "tools"], first_script("bcc", "tools")),
    (["header", "-o", "include/spdk_internal/usdt.h"], "include/spdk_internal/usdt.h"),
    (["docs", "-o", "doc/usdt.md"], "doc/usdt.md"),
])
def test_every_writing_command_refuses_a_file_it_did_not_generate(spdk_checkout, command, written):
    """generate and the single-output commands, with or without -o: an
    unmarked file where the output goes is refused (exit 2, one line
    naming it and --force); --force replaces it."""
    target = spdk_checkout / written
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("# hand-written\n")
    if command == ["generate"]:  # past SPDK's header: the script is the file refused
        assert cli("header", "--force", cwd=spdk_checkout).returncode == 0
    before = target.read_bytes()
    refused = cli(*command, cwd=spdk_checkout)
    assert refused.returncode == 2, refused.stderr
    assert len(refused.stderr.splitlines()) == 1
    assert refused.stderr.startswith(f"{written}: error: not written by probegen") and "--force" in refused.stderr
    assert target.read_bytes() == before
    forced = cli(*command, "--force", cwd=spdk_checkout)
    assert forced.returncode == 0, forced.stderr
    assert has_marker(target.read_bytes())


def test_files_written_before_markers_existed_need_force_once(project):
    """Only the marker line counts: a file in the old 'Generated by
    probegen from ...' form is refused like any other."""
    header = project / "include" / "spdk_internal" / "usdt.h"
    header.parent.mkdir(parents=True)
    header.write_text("/*\n * Generated by probegen from probes.yaml: do not edit; change the\n */\n")
    assert cli("header", cwd=project).returncode == 2


# --- Groups renamed: generated files left behind ---------------------------------

def test_check_reports_and_generate_removes_files_of_a_renamed_group(spdk_checkout):
    assert cli("generate", "--force", cwd=spdk_checkout).returncode == 0
    hand_written = spdk_checkout / "scripts" / "bpf" / "probegen" / "mine.bt"
    hand_written.write_text("// my own script, kept with the generated ones\n")
    before = {str(f.path.relative_to(spdk_checkout)) for f in rendered(spdk_checkout)}
    catalog = spdk_checkout / "probes.yaml"
    catalog.write_text(catalog.read_text().replace("group: nvmf\n", "group: nvmf_target\n"))
    expected = before - {str(f.path.relative_to(spdk_checkout)) for f in rendered(spdk_checkout)}
    assert "scripts/bpf/probegen/nvmf.bt" in expected  # (one BCC tool per provider: none of its files go)

    check = cli("check", cwd=spdk_checkout)
    assert check.returncode == 1
    leftovers = [line for line in check.stderr.splitlines() if "no longer generates" in line]
    assert {line.split(":")[0] for line in leftovers} == expected
    assert "mine.bt" not in check.stderr and "scripts/bpf/nvmf.bt" not in check.stderr

    generate = cli("generate", cwd=spdk_checkout)
    assert generate.returncode == 0, generate.stderr
    assert "removed   scripts/bpf/probegen/nvmf.bt" in generate.stdout.splitlines()
    assert not any((spdk_checkout / name).exists() for name in expected)
    assert (spdk_checkout / "scripts" / "bpf" / "probegen" / "nvmf_target.bt").exists()
    assert hand_written.exists() and (spdk_checkout / "scripts" / "bpf" / "nvmf.bt").read_text() == SPDK_FILES[
        "scripts/bpf/nvmf.bt"]
    final = cli("check", cwd=spdk_checkout)
    assert final.returncode == 0, final.stderr


def test_check_reports_leftovers_in_machine_formats(spdk_checkout):
    import json

    assert cli("generate", "--force", cwd=spdk_checkout).returncode == 0
    catalog = spdk_checkout / "probes.yaml"
    catalog.write_text(catalog.read_text().replace("group: thread\n", "group: threads\n"))
    result = cli("check", "--format", "json", cwd=spdk_checkout)
    assert result.returncode == 1
    rules = {r["rule"] for r in json.loads(result.stdout)["results"]} if "results" in result.stdout else set()
    assert "leftover-file" in result.stdout, (rules, result.stdout[:500])
