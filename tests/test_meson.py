"""The meson example, built for real: the usdt feature option, `meson test`
running `probegen verify`, and the no-rebuild promise read from ninja's log."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import require, require_sdt, usdt_probes
from helpers.builds import NinjaRuns, copy_example, objects, run, touch

LIB_PROBES = {("counter", "counter_add"), ("counter", "counter_reset")}
PROG_PROBES = {("counter", "demo_start"), ("counter", "demo_done")}
GENERATED = ["counter_probes.h", "probes.md"]


@pytest.fixture
def project(tmp_path) -> Path:
    require("meson", pip="meson")
    require("ninja", pip="ninja")
    require("cc", "gcc")
    return copy_example("meson", tmp_path)


def setup(project: Path, name: str, *options: str, check: bool = True):
    return run(["meson", "setup", name, *options], project, check=check)


def build(project: Path, name: str) -> Path:
    build_dir = project / name
    run(["ninja", "-C", build_dir], project)
    return build_dir


def meson_test(build_dir: Path, check: bool = True):
    return run(["meson", "test", "-C", build_dir, "--print-errorlogs"], build_dir.parent, check=check)


def binaries(build_dir: Path) -> tuple[Path, Path]:
    return build_dir / "counter-demo", build_dir / "libcounter.so.1.0"


def no_work(build_dir: Path) -> bool:
    return "ninja: no work to do." in run(["ninja", "-C", build_dir, "-n"], build_dir.parent).stdout


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_usdt_enabled_puts_each_probe_where_it_fires_and_meson_test_verifies(project):
    require_sdt()
    setup(project, "on", "-Dusdt=enabled")
    build_dir = build(project, "on")
    program, library = binaries(build_dir)
    assert usdt_probes(program) == PROG_PROBES
    assert usdt_probes(library) == LIB_PROBES
    result = meson_test(build_dir)
    assert "probes" in result.stdout and "Fail:              0" in result.stdout
    # The docs target ran too, from the same catalog.
    assert "usdt:BINARY:counter:counter_add" in (build_dir / "probes.md").read_text()


def test_usdt_disabled_compiles_probes_out_and_meson_test_checks_none(project):
    setup(project, "off", "-Dusdt=disabled")
    build_dir = build(project, "off")
    for binary in binaries(build_dir):
        assert usdt_probes(binary) == set()
    result = meson_test(build_dir)
    assert ":probes" in result.stdout and "Fail:              0" in result.stdout
    log = (build_dir / "meson-logs" / "testlog.txt").read_text()
    assert "--expect-none" in log and "no probe of provider 'counter' in 2 binaries, as expected" in log
    assert "#undef COUNTER_CONFIG_USDT" in (build_dir / "counter_config.h").read_text()


def test_meson_test_fails_when_binaries_drift_from_the_catalog(project):
    require_sdt()
    setup(project, "on", "-Dusdt=enabled")
    build(project, "on")
    # A probe the catalog promises but no code fires: the header gains a
    # macro, the build succeeds, and only the verify test can notice.
    with open(project / "probes.yaml", "a") as catalog:
        catalog.write("  - {name: demo_never, group: app, doc: Declared but never fired., args: []}\n")
    build_dir = build(project, "on")
    result = meson_test(build_dir, check=False)
    assert result.returncode != 0
    log = (build_dir / "meson-logs" / "testlog.txt").read_text()
    assert "demo_never" in log


def test_auto_follows_a_usable_sdt_h_and_enabled_fails_clearly_without(project, tmp_path):
    require_sdt()
    setup(project, "auto")
    assert usdt_probes(binaries(build(project, "auto"))[0]) == PROG_PROBES

    # A machine without <sys/sdt.h>, as the compiler sees it: the include
    # path finds a sys/sdt.h that cannot be compiled.
    shadow = tmp_path / "no-sdt" / "sys"
    shadow.mkdir(parents=True)
    (shadow / "sdt.h").write_text('#error "hidden by the test: a machine without <sys/sdt.h>"\n')
    c_args = f"-Dc_args=-I{shadow.parent}"
    setup(project, "auto-missing", c_args)
    for binary in binaries(build(project, "auto-missing")):
        assert usdt_probes(binary) == set()
    assert "Fail:              0" in meson_test(project / "auto-missing").stdout

    failed = setup(project, "enabled-missing", "-Dusdt=enabled", c_args, check=False)
    assert failed.returncode != 0
    assert "ERROR: Problem encountered: -Dusdt=enabled needs <sys/sdt.h>: install systemtap-sdt-dev" in failed.stdout


def test_unchanged_outputs_recompile_nothing_and_changed_ones_only_their_users(project):
    require_sdt()
    setup(project, "on", "-Dusdt=enabled")
    build_dir = build(project, "on")
    catalog = project / "probes.yaml"
    header = build_dir / "counter_probes.h"
    assert no_work(build_dir)

    # Touched, same content: both generators run, write nothing, and ninja
    # (restat) compiles nothing; afterwards nothing is left to do.
    touch(catalog)
    runs = NinjaRuns(build_dir)
    build(project, "on")
    assert sorted(runs.outputs()) == GENERATED
    assert no_work(build_dir)

    # A change only scripts and docs see (print in hex): the header's bytes
    # are the same, so again no C object recompiles; the reference changes.
    before = header.read_bytes()
    edit(catalog, "{name: amount, type: int64_t}", "{name: amount, type: int64_t, hex: true}")
    runs = NinjaRuns(build_dir)
    build(project, "on")
    assert sorted(runs.outputs()) == GENERATED
    assert header.read_bytes() == before
    assert "amount=0x%lx" in (build_dir / "probes.md").read_text()
    assert no_work(build_dir)

    # A probe's doc is also a comment in the header: the objects that
    # include it recompile; version.c, which does not, stays.
    edit(catalog, "doc: A value is added to a counter.", "doc: A value is added to a named counter.")
    runs = NinjaRuns(build_dir)
    build(project, "on")
    assert objects(runs.outputs()) == {"libcounter.so.1.0.p/src_counter.c.o", "counter-demo.p/src_main.c.o"}
    assert no_work(build_dir)
    assert "Fail:              0" in meson_test(build_dir).stdout


def test_ninja_records_the_depfile_catalog_and_template(project):
    """The depfile names probegen's own template too: a newer probegen regenerates."""
    require_sdt()
    setup(project, "on", "-Dusdt=enabled")
    build_dir = build(project, "on")
    for output, template in (("counter_probes.h", "usdt.h.j2"), ("probes.md", "docs.md.j2")):
        deps = run(["ninja", "-C", build_dir, "-t", "deps", output], project).stdout
        listed = [Path(line.strip()) for line in deps.splitlines()[1:] if line.strip()]
        assert any(p.name == "probes.yaml" for p in listed), deps
        assert any(p.name == template and p.is_file() for p in listed), deps
