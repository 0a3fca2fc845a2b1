"""Catalog paths with characters make or ninja give a meaning (issue 23,
item 4), through real GNU make and ninja reading probegen's depfile: a ';'
made make run a command, and ninja split the name there. A path both can
read is written so both name the file exactly; one they read differently is
refused in one line, and no depfile is written."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import require

REPO = Path(__file__).parent.parent


def header_with_depfile(directory: Path, catalog: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "probegen", "header", "-c", catalog, "-o", "out.h",
                           "--depfile", "out.d"], capture_output=True, text=True, cwd=directory, timeout=120)


def place_catalog(directory: Path, name: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "probes.yaml", path)
    return path


@pytest.mark.parametrize("name", ["a;touch${IFS}PWNED;b/probes.yaml", "100%/probes.yaml", "*/probes.yaml",
                                  "a?/probes.yaml", "[ab]/probes.yaml", "back\\slash/probes.yaml"])
def test_a_name_make_and_ninja_read_differently_is_refused(tmp_path, name):
    place_catalog(tmp_path, name)
    result = header_with_depfile(tmp_path, name)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1 and "a depfile cannot name a path with" in result.stderr
    assert not (tmp_path / "out.d").exists() and not (tmp_path / "PWNED").exists()


NAME = "dir with space#hash:colon$dollar/probes.yaml"


def test_make_reads_the_escaped_name(tmp_path):
    require("make", "make")
    catalog = place_catalog(tmp_path, NAME)
    assert header_with_depfile(tmp_path, NAME).returncode == 0
    (tmp_path / "Makefile").write_text("out.h:\n\ttouch out.h\n-include out.d\n")
    assert subprocess.run(["make", "-q", "out.h"], cwd=tmp_path).returncode == 0  # up to date
    stamp = (tmp_path / "out.h").stat().st_mtime
    shutil.os.utime(catalog, (stamp + 10, stamp + 10))
    # make -q: 1 means the target is out of date, so make read the catalog's name right.
    assert subprocess.run(["make", "-q", "out.h"], cwd=tmp_path).returncode == 1
    assert not list(tmp_path.glob("PWNED*"))


def test_ninja_records_the_exact_name(tmp_path):
    require("ninja", "ninja")
    place_catalog(tmp_path, NAME)
    (tmp_path / "build.ninja").write_text(
        f"rule gen\n  command = {sys.executable} -m probegen header -c '{NAME.replace('$', '$$')}' -o out.h --depfile out.d\n"
        "  depfile = out.d\n  deps = gcc\nbuild out.h: gen\n")
    built = subprocess.run(["ninja"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert built.returncode == 0, built.stdout
    deps = subprocess.run(["ninja", "-t", "deps"], capture_output=True, text=True, cwd=tmp_path).stdout
    assert f"    {NAME}\n" in deps, deps


def test_a_name_not_utf8_is_refused_as_such(tmp_path):
    """Bug: a byte that is not UTF-8 was refused as 'control characters'."""
    name = "a\udcffb/probes.yaml"  # the name's byte 0xff, as os.fsdecode gives it
    place_catalog(tmp_path, name)
    result = subprocess.run([sys.executable, "-m", "probegen", "header", "-c", name.encode("utf-8", "surrogateescape"),
                             "-o", "out.h", "--depfile", "out.d"], capture_output=True, text=True, cwd=tmp_path,
                            timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == "a\\xffb/probes.yaml: error: a depfile cannot name a path that is not UTF-8\n"
    assert not (tmp_path / "out.d").exists()
