"""The CMake example and probegen's CMake module, built for real with CMake
and ninja from PyPI (this venv's) and gcc: Ninja and Unix Makefiles, USDT on
and off, ctest, and what rebuilds when the catalog is touched or changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import VENV_BIN, require, require_sdt, usdt_probes
from helpers.builds import copy_example, run, touch

CMAKE = VENV_BIN / "cmake"
CTEST = VENV_BIN / "ctest"
GENERATORS = ["Ninja", "Unix Makefiles"]
ALL_PROBES = {("counter", n) for n in ("counter_add", "counter_reset", "demo_start", "demo_done")}


@pytest.fixture
def project(tmp_path) -> Path:
    if not CMAKE.exists():
        pytest.skip(f"cmake from PyPI not in {VENV_BIN} (pip install -e '.[test]')")
    require("cc", "gcc")
    return copy_example("cmake", tmp_path)


def configure(project: Path, generator: str, *options: str, check: bool = True):
    if generator == "Ninja" and not (VENV_BIN / "ninja").exists():
        pytest.skip(f"ninja from PyPI not in {VENV_BIN} (pip install -e '.[test]')")
    if generator == "Unix Makefiles":
        require("make", "make")
    return run([CMAKE, "-S", project, "-B", project / "build", "-G", generator, *options], project, check=check)


def build(project: Path):
    return run([CMAKE, "--build", project / "build"], project)


def ctest(project: Path, *, check: bool = True):
    return run([CTEST, "--test-dir", project / "build", "--output-on-failure"], project, check=check)


def binaries(project: Path) -> tuple[Path, Path]:
    return project / "build" / "counter-demo", project / "build" / "libcounter.so"


def built(project: Path) -> dict[str, int]:
    """mtime of every object and binary: what a build redid."""
    files = [*(project / "build" / "CMakeFiles").glob("*.dir/src/*.c.o"), *binaries(project)]
    return {str(f.relative_to(project)): f.stat().st_mtime_ns for f in files}


def rebuilt(before: dict[str, int], after: dict[str, int]) -> set[str]:
    return {Path(f).name for f in after if after[f] != before.get(f)}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("generator", GENERATORS)
def test_usdt_on_builds_verifies_and_rebuilds_only_on_change(project, generator):
    require_sdt()
    configure(project, generator, "-DCOUNTER_USDT=ON")
    build(project)
    program, library = binaries(project)
    assert usdt_probes(program) | usdt_probes(library) == ALL_PROBES
    assert "100% tests passed" in ctest(project).stdout
    assert run([program, "3"], project).stdout == "counter demo 1.0: total 6\n"

    # Touched, same content: the header keeps its mtime, nothing recompiles
    # or relinks, and the next build does nothing (no probegen either).
    before = built(project)
    touch(project / "probes.yaml")
    assert "probegen" in build(project).stdout
    assert rebuilt(before, built(project)) == set()
    quiet = build(project).stdout
    assert "probegen" not in quiet and rebuilt(before, built(project)) == set()
    if generator == "Ninja":
        assert "ninja: no work to do" in quiet

    # A new probe changes the header: only the sources that include it
    # recompile, and ctest's verify finds the probe no code fires.
    with open(project / "probes.yaml", "a") as catalog:
        catalog.write("  - {name: demo_never, group: app, doc: Declared but never fired., args: []}\n")
    build(project)
    assert rebuilt(before, built(project)) == {"counter.c.o", "main.c.o", "counter-demo", "libcounter.so"}
    failed = ctest(project, check=False)
    assert failed.returncode != 0 and "demo_never" in failed.stdout


@pytest.mark.parametrize("generator", GENERATORS)
def test_usdt_off_has_no_probes_and_switching_on_compiles_them_in(project, generator):
    configure(project, generator, "-DCOUNTER_USDT=OFF")
    build(project)
    for binary in binaries(project):
        assert usdt_probes(binary) == set()
    tests = ctest(project).stdout
    assert "100% tests passed" in tests and "probes" in tests

    require_sdt()
    configure(project, generator, "-DCOUNTER_USDT=ON")
    build(project)
    program, library = binaries(project)
    assert usdt_probes(program) | usdt_probes(library) == ALL_PROBES
    ctest(project)


def test_stray_probes_fail_the_usdt_off_test(project, tmp_path):
    """--expect-none is a real check: a binary with probes fails it."""
    require_sdt()
    on = copy_example("cmake", tmp_path / "on")
    configure(on, "Ninja", "-DCOUNTER_USDT=ON")
    build(on)
    configure(project, "Ninja", "-DCOUNTER_USDT=OFF")
    build(project)
    binaries(on)[1].replace(binaries(project)[1])
    failed = ctest(project, check=False)
    assert failed.returncode != 0 and "counter_add" in failed.stdout


def test_catalog_mistake_fails_configure_with_its_position(project):
    edit(project / "probes.yaml", "provider: counter", "provider: counter\nprovider_typo: 1")
    result = configure(project, "Ninja", check=False)
    assert result.returncode != 0
    assert "probes.yaml:7:1" in result.stderr and "Traceback" not in result.stderr


def test_module_usage_errors_are_clear(project):
    edit(project / "CMakeLists.txt", "CATALOG probes.yaml OUTPUT", "OUTPUT")
    result = configure(project, "Ninja", check=False)
    assert result.returncode != 0
    assert "probegen_add_header(counter_probes): CATALOG <probes.yaml> is required" in result.stderr


def test_usdt_off_needs_an_enable_macro(project):
    """A dtrace-style catalog without header.enable_macro compiles its probes
    in always: switching them off is refused, not silently ignored."""
    catalog = project / "probes.yaml"
    text = catalog.read_text()
    text = text.replace("  enable_macro: COUNTER_CONFIG_USDT", "  style: dtrace  #").replace("  typed_prefix: COUNTER_PROBE\n", "")
    catalog.write_text(text)
    result = configure(project, "Ninja", "-DCOUNTER_USDT=OFF", check=False)
    assert result.returncode != 0
    assert "USDT is off, but probes.yaml sets no header.enable_macro" in " ".join(result.stderr.split())


def test_module_works_through_include_too(project):
    require_sdt()
    edit(project / "CMakeLists.txt", "find_package(probegen 0.1 CONFIG REQUIRED HINTS ${probegen_cmake_dir})",
         "include(${probegen_cmake_dir}/probegenConfig.cmake)")
    configure(project, "Ninja", "-DCOUNTER_USDT=ON")
    build(project)
    program, library = binaries(project)
    assert usdt_probes(program) | usdt_probes(library) == ALL_PROBES
    ctest(project)
