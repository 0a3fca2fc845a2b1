"""File names on root's terminal and in CI logs (issue 23, item 7): a
catalog or binary path holding a newline, '::error::' or an escape sequence
must neither forge a GitHub Actions workflow command, nor reach the terminal
raw, nor make the JUnit XML ill-formed, in every format verify writes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from helpers.drift import DRIFT_CATALOG

BINARY = "::error file=x.c,line=1::forged\n::warning::again\x1b[31m\x07.so"
CATALOG = "::error::cat\n::error::log\x1b]0;title\x07.yaml"


def probegen(*args, cwd, env=None) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "probegen", *map(str, args)], capture_output=True, text=True,
                            cwd=cwd, timeout=120, env=env)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def assert_inert(text: str) -> None:
    """No line a runner takes for a command, no control character but newlines."""
    for line in text.split("\n"):
        assert not line.lstrip(" ").startswith("::"), line
        assert line.isprintable(), repr(line)


@pytest.fixture
def work(tmp_path) -> Path:
    shutil.copy(DRIFT_CATALOG, tmp_path / CATALOG)
    shutil.copy("/bin/true", tmp_path / BINARY)  # no probe notes: a finding at the binary
    return tmp_path


def test_verify_text_and_errors(work):
    result = probegen("verify", "-c", CATALOG, BINARY, "missing\n::error::gone", cwd=work)
    assert result.returncode == 2  # the missing file
    assert "no .note.stapsdt section" in result.stdout
    assert_inert(result.stdout)
    assert_inert(result.stderr)
    assert len(result.stderr.strip().splitlines()) == 1


def test_verify_junit_is_well_formed(work):
    result = probegen("verify", "-c", CATALOG, BINARY, "--format", "junit", cwd=work)
    assert result.returncode == 1
    cases = ET.fromstring(result.stdout).iter("testcase")
    names = [case.get("name") for case in cases]
    assert "\\x3a:error file=x.c,line=1::forged\\x0a::warning::again\\x1b[31m\\x07.so" in names, names


def test_verify_github_annotations_are_only_its_own(work):
    result = probegen("verify", "-c", CATALOG, BINARY, "--format", "github", cwd=work)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    findings = json.loads(probegen("verify", "-c", CATALOG, BINARY, "--format", "json", cwd=work).stdout)["findings"]
    assert [line.split(" ", 1)[0] for line in lines[:-1]] == ["::error"] * len(findings) and len(findings) == 3
    assert lines[0].startswith("::error file=%3A%3Aerror file=x.c%2Cline=1%3A%3Aforged%0A%3A%3Awarning"), lines[0]
    assert all(line.isprintable() for line in lines)
    assert_inert(lines[-1])


def test_verify_json_keeps_the_names(work):
    result = probegen("verify", "-c", CATALOG, BINARY, "--format", "json", cwd=work)
    assert json.loads(result.stdout)["binaries"] == [BINARY]


def test_a_name_that_is_not_utf8_shows_its_bytes(tmp_path):
    """Python hands such a name over with surrogateescape's U+DC80..U+DCFF: shown as the bytes it has."""
    result = subprocess.run([sys.executable, "-m", "probegen", "list", b"caf\xe9\xff\x1b.so"], capture_output=True,
                            cwd=tmp_path, timeout=120)
    assert result.returncode == 2
    assert result.stderr == b"caf\\xe9\\xff\\x1b.so: error: no such file\n"
