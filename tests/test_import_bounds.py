"""Bounds before work in `probegen import` (issue 23, item 8): a note with
40,000 arguments was refused only after 42 s of quadratic checking, a
100,000-character probe name was imported, and a .d file within the input
limit became a catalog over it that every other command refused. Each is
now one error line, found before the per-argument work (CPU time bounded
at 5 s, against 21 s before), and no catalog is written."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import require

# The .note.stapsdt entry <sys/sdt.h> would emit, with any name and arguments.
BASE = ('__asm__(".ifndef _.stapsdt.base\\n.pushsection .stapsdt.base,\\"aG\\",\\"progbits\\",.stapsdt.base,comdat\\n'
        '.weak _.stapsdt.base\\n.hidden _.stapsdt.base\\n_.stapsdt.base: .space 1\\n.size _.stapsdt.base, 1\\n'
        '.popsection\\n.endif\\n");\n')


def note(name: str, args: str) -> str:
    return ('__asm__(".pushsection .note.stapsdt,\\"?\\",\\"note\\"\\n.balign 4\\n'
            '.4byte 992f-991f, 994f-993f, 3\\n991: .asciz \\"stapsdt\\"\\n992: .balign 4\\n'
            '993: .8byte main\\n.8byte _.stapsdt.base\\n.8byte 0\\n'
            f'.asciz \\"prov\\"\\n.asciz \\"{name}\\"\\n.asciz \\"{args}\\"\\n994: .balign 4\\n.popsection\\n");\n')


def build(directory: Path, name: str, args: str) -> Path:
    require("gcc", "gcc")
    source = directory / "notes.c"
    source.write_text(BASE + note(name, args) + "int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-O0", source, "-o", directory / "notes"], check=True)
    return directory / "notes"


def run_import(*args, cwd) -> tuple[subprocess.CompletedProcess, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    result = subprocess.run([sys.executable, "-m", "probegen", "import", *map(str, args), "-o", "out.yaml"],
                            capture_output=True, text=True, cwd=cwd, timeout=300)
    return result, resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before


def assert_refused(result, cwd: Path, *needles: str) -> None:
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1 and all(n in result.stderr for n in needles), result.stderr
    assert not (cwd / "out.yaml").exists()


def test_forty_thousand_arguments(tmp_path):
    binary = build(tmp_path, "many", " ".join(["-4@%eax"] * 40_000))
    result, cpu = run_import(binary, "--provider", "prov", cwd=tmp_path)
    assert_refused(result, tmp_path, "40000 arguments", "at most 12")
    assert cpu < 5, cpu


def test_hundred_thousand_character_name(tmp_path):
    binary = build(tmp_path, "n" * 100_000, "-4@%eax")
    result, _ = run_import(binary, "--provider", "prov", cwd=tmp_path)
    assert_refused(result, tmp_path, "100000 characters", "at most 255")


@pytest.mark.slow
def test_provider_file_whose_catalog_is_over_the_limit(tmp_path):
    args = ", ".join(["int"] * 12)
    lines = ["provider big {", *(f"  probe probe_number_{i}({args});" for i in range(27_000)), "};"]
    (tmp_path / "big.d").write_text("\n".join(lines) + "\n")
    assert (tmp_path / "big.d").stat().st_size < 16 << 20
    result, _ = run_import("big.d", cwd=tmp_path)
    assert_refused(result, tmp_path, "at most 16 MiB")
