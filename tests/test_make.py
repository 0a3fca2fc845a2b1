"""The make example and probegen.mk, built for real with GNU make and gcc:
CONFIG_USDT=y on and off, `make verify-probes`, and what recompiles."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import EXAMPLES, REPO, require, require_bpftrace, require_sdt, usdt_probes
from helpers.builds import copy_example, run, touch

FRAGMENT = REPO / "probegen" / "data" / "probegen.mk"  # shipped; `probegen paths --make` prints it
LIB_PROBES = {("counter", "counter_add"), ("counter", "counter_reset")}
PROG_PROBES = {("counter", "demo_start"), ("counter", "demo_done")}


@pytest.fixture
def project(tmp_path) -> Path:
    require("make", "make")
    require("cc", "gcc")
    return copy_example("make", tmp_path)


def make(project: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return run(["make", f"PROBEGEN_MK={FRAGMENT}", *args], project, check=check)


def compiled(result: subprocess.CompletedProcess) -> set[str]:
    """C sources make compiled, from the commands it printed."""
    return set(re.findall(r" -c (src/\S+\.c) ", result.stdout))


def binaries(project: Path) -> tuple[Path, Path]:
    return project / "build" / "counter-demo", project / "build" / "libcounter.so"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_built_both_ways_and_switching_recompiles_only_probe_users(project):
    require_sdt()
    off = make(project)
    assert compiled(off) == {"src/counter.c", "src/main.c", "src/version.c"}
    for binary in binaries(project):
        assert usdt_probes(binary) == set()
    assert "no USDT probes (CONFIG_USDT is not y)" in make(project, "verify-probes").stdout
    assert run([binaries(project)[0], "3"], project).stdout == "counter demo 1.0: total 6\n"

    # CONFIG_USDT=y rewrites the config header: what includes the probes
    # recompiles, version.c does not.
    on = make(project, "CONFIG_USDT=y")
    assert compiled(on) == {"src/counter.c", "src/main.c"}
    program, library = binaries(project)
    assert usdt_probes(program) == PROG_PROBES
    assert usdt_probes(library) == LIB_PROBES
    verified = make(project, "CONFIG_USDT=y", "verify-probes")
    assert "probegen verify --catalog probes.yaml build/counter-demo build/libcounter.so" in verified.stdout
    assert compiled(make(project, "CONFIG_USDT=y")) == set()

    # And back.
    assert compiled(make(project)) == {"src/counter.c", "src/main.c"}
    assert usdt_probes(library) == set()


def test_unchanged_header_recompiles_nothing(project):
    require_sdt()
    make(project, "CONFIG_USDT=y")
    header = project / "build" / "counter_probes.h"
    catalog = project / "probes.yaml"
    mtimes = {o: o.stat().st_mtime_ns for o in (project / "build").glob("*.o")}

    # Touched: probegen runs (the catalog is newer than the stamp), writes
    # nothing, and make, seeing the header's old mtime, compiles nothing;
    # the next make does nothing at all.
    touch(catalog)
    again = make(project, "CONFIG_USDT=y")
    assert "probegen header" in again.stdout
    assert compiled(again) == set()
    assert {o: o.stat().st_mtime_ns for o in mtimes} == mtimes
    quiet = make(project, "CONFIG_USDT=y")
    assert "probegen" not in quiet.stdout and compiled(quiet) == set()

    # A change only scripts and docs see: same header bytes, no compile.
    before = header.read_bytes()
    edit(catalog, "{name: amount, type: int64_t}", "{name: amount, type: int64_t, hex: true}")
    again = make(project, "CONFIG_USDT=y")
    assert compiled(again) == set() and header.read_bytes() == before
    assert "amount=0x%lx" in (project / "build" / "probes.md").read_text()

    # A probe doc is a comment in the header: its users recompile, only them.
    edit(catalog, "doc: A value is added to a counter.", "doc: A value is added to a named counter.")
    assert compiled(make(project, "CONFIG_USDT=y")) == {"src/counter.c", "src/main.c"}
    make(project, "CONFIG_USDT=y", "verify-probes")


def test_verify_probes_fails_on_drift_either_way(project, tmp_path):
    require_sdt()
    make(project, "CONFIG_USDT=y")
    # Probes in a binary built without CONFIG_USDT=y would be a build bug.
    stray = tmp_path / "stray-demo"
    shutil.copy(binaries(project)[0], stray)
    result = make(project, "verify-probes", f"PROBEGEN_BINARIES={stray}", check=False)
    assert result.returncode != 0
    assert "USDT probes found although CONFIG_USDT is not y" in result.stdout

    # A probe the catalog declares but no code fires.
    with open(project / "probes.yaml", "a") as catalog:
        catalog.write("  - {name: demo_never, group: app, doc: Declared but never fired., args: []}\n")
    result = make(project, "CONFIG_USDT=y", "verify-probes", check=False)
    assert result.returncode != 0
    assert "demo_never" in result.stdout + result.stderr


def test_deleted_header_is_regenerated_and_fragment_errors_are_clear(project):
    make(project)
    (project / "build" / "counter_probes.h").unlink()
    assert "probegen header" in make(project).stdout
    assert (project / "build" / "counter_probes.h").exists()

    (project / "Makefile.bad").write_text(f"all:\ninclude {FRAGMENT}\n")
    result = run(["make", "-f", "Makefile.bad"], project, check=False)
    assert result.returncode != 0
    assert "probegen.mk: set PROBEGEN_HEADER to the header to generate" in result.stderr

    (project / "Makefile.bad").write_text(
        f"PROBEGEN_HEADER := x.h\nPROBEGEN_CONFIG_HEADER := c.h\ninclude {FRAGMENT}\n")
    result = run(["make", "-f", "Makefile.bad"], project, check=False)
    assert "PROBEGEN_CONFIG_HEADER needs PROBEGEN_ENABLE_MACRO" in result.stderr


def test_docs_one_liner_traces_the_built_program(project):
    """The reference's one-liner, pasted as is, shows the probe firing."""
    require_sdt()
    bpftrace = require_bpftrace()
    if os.geteuid() != 0:
        pytest.skip("bpftrace needs root to attach probes")
    make(project, "CONFIG_USDT=y")
    program = binaries(project)[0]
    docs = (project / "build" / "probes.md").read_text()
    line = next(l for l in docs.splitlines() if l.startswith("bpftrace -e 'usdt:BINARY:counter:demo_start"))
    script = line.split("-e ", 1)[1].strip("'").replace("BINARY", str(program))
    result = subprocess.run([bpftrace, "-e", script, "-c", f"{program} 5"], capture_output=True, text=True,
                            timeout=60)
    assert "demo_start rounds=5" in result.stdout, result.stdout + result.stderr


def test_example_sources_are_the_same_in_both_examples():
    """One copy (examples/src), each of its files linked into each example's
    src (links to files, which the sdist stores as the files they lead to):
    the examples cannot drift apart."""
    shared = sorted(p.name for p in (EXAMPLES / "src").iterdir())
    for example in ("make", "meson", "cmake"):
        files = sorted((EXAMPLES / example / "src").iterdir())
        assert [f.name for f in files] == shared
        assert all(f.is_symlink() and f.resolve() == EXAMPLES / "src" / f.name for f in files)
