"""`probegen import`: catalogs written from real binaries load with the
catalog loader and pass `probegen verify` on the same binaries."""

from __future__ import annotations

import pytest

from helpers import LIBJVM, PYTHON311, readelf_notes, require_file, run_cli, sdt_include_dir
from helpers.pgtest import build_pgtest
from probegen.catalog import load_catalog


def import_and_verify(capsys, tmp_path, provider, *binaries):
    out = tmp_path / f"{provider}.yaml"
    code, stdout, err = run_cli(capsys, "import", *binaries, "--provider", provider, "-o", out)
    assert code == 0 and not err and not stdout
    catalog = load_catalog(out)
    code, stdout, err = run_cli(capsys, "verify", "-c", out, *binaries)
    assert code == 0, stdout + err
    return catalog


def test_python_import_then_verify(tmp_path, capsys):
    require_file(PYTHON311, "python3.11-minimal")
    catalog = import_and_verify(capsys, tmp_path, "python", PYTHON311)
    names = {n["name"] for n in readelf_notes(PYTHON311) if n["provider"] == "python"}
    assert {p.name for p in catalog.probes} == names
    assert not catalog.arg0 and catalog.header.semaphores  # python's probes have semaphores
    assert all(p.enabled_check for p in catalog.probes)  # so the header gives each one
    line = catalog.probe("line")
    assert [a.ctype.spelling for a in line.args] == ["uint64_t", "uint64_t", "int32_t"]


def test_libjvm_import_then_verify(tmp_path, capsys):
    require_file(LIBJVM, "openjdk-17-jre-headless")
    catalog = import_and_verify(capsys, tmp_path, "hotspot_jni", LIBJVM)
    assert len(catalog.probes) == 473 and not catalog.header.semaphores


@pytest.fixture(scope="module")
def spdk_like(tmp_path_factory):
    out = tmp_path_factory.mktemp("import")
    sdt = sdt_include_dir(out / "sdt")
    return {"x86_64": build_pgtest("x86_64", out, "good"), "i686": build_pgtest("i686", out, "i686", sdt=sdt)}


@pytest.mark.parametrize("arch,pointer_type", [("x86_64", "uint64_t"), ("i686", "uint32_t")])
def test_spdk_arg0_recognised(spdk_like, tmp_path, capsys, arch, pointer_type):
    catalog = import_and_verify(capsys, tmp_path, "pgtest", spdk_like[arch])
    assert catalog.arg0 and catalog.header.clock
    by_name = {p.name: p for p in catalog.probes}
    assert by_name["qpair_add"].ticks and not by_name["state_change"].ticks and not by_name["tick"].ticks
    assert [a.ctype.spelling for a in by_name["qpair_add"].args] == [pointer_type, "uint16_t"]
    assert [a.name for a in by_name["state_change"].args] == ["arg1", "arg2", "arg3"]
    assert [a.ctype.spelling for a in by_name["state_change"].args] == [pointer_type, "int32_t", "uint32_t"]
    assert by_name["tick"].args == ()
    # Semaphores as the generated header gave them: qpair_add's as a ticks probe.
    assert catalog.header.semaphores and by_name["state_change"].enabled_check
    assert not by_name["tick"].enabled_check and not by_name["qpair_add"].enabled_check


def test_stdout_and_unknown_provider(spdk_like, capsys):
    code, out, _ = run_cli(capsys, "import", spdk_like["x86_64"], "--provider", "pgtest")
    assert code == 0 and out.startswith("# Imported by `probegen import`") and "provider: pgtest" in out
    assert "$schema" not in out  # a path inside probegen's repository means nothing beside the user's catalog
    code, out, err = run_cli(capsys, "import", spdk_like["x86_64"], "--provider", "nosuch")
    assert code == 2 and not out
    assert err.strip().endswith("providers found: pgtest") and err.count("\n") == 1
    code, _, err = run_cli(capsys, "import", spdk_like["x86_64"], "--provider", "not-a-name")
    assert code == 2 and "not a C identifier" in err


def test_unreadable_binary(tmp_path, capsys):
    (tmp_path / "x").write_text("hello")
    code, out, err = run_cli(capsys, "import", tmp_path / "x", "--provider", "p")
    assert code == 2 and not out and err == f"{tmp_path / 'x'}: error: not an ELF file (no ELF magic number)\n"


def test_nothing_to_import_from(capsys):
    code, out, err = run_cli(capsys, "import", "--provider", "p")
    assert code == 2 and not out
    assert err == "import: error: give the binaries to import from, or a provider file (FILE.d)\n"
