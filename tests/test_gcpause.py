"""Garbage collection around bulk work: paused and restored as a library,
frozen at the end of the pause when probegen is the program."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from probegen.catalog import load_catalog
from probegen.gcpause import gc_paused
from probegen.generators.header import render_header

REPO = Path(__file__).resolve().parent.parent


def test_library_pause_restores_collection_and_freezes_nothing():
    frozen = gc.get_freeze_count()
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # nested: the outer pause decides
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen


def test_library_pause_restores_collection_after_an_error():
    try:
        with gc_paused():
            raise ValueError("boom")
    except ValueError:
        pass
    assert gc.isenabled()


def test_program_freezes_what_the_command_built(tmp_path):
    """Run as the program, `probegen header` ends its pause by freezing (no
    collection walks the model again) and leaves collection enabled; the
    header is the one the library renders."""
    output = tmp_path / "usdt.h"
    script = (
        "import gc, sys\n"
        "from probegen.cli import main\n"
        f"sys.argv = ['probegen', 'header', '-c', {str(REPO / 'probes.yaml')!r}, '-o', {str(output)!r}]\n"
        "code = main()\n"
        "print(code, gc.get_freeze_count() > 0, gc.isenabled())\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                            env={"PROBEGEN_NO_CACHE": "1", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "True", "True"]
    assert output.read_text() == render_header(load_catalog(REPO / "probes.yaml"))
