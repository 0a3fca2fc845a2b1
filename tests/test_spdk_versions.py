"""One SPDK-shaped program at two versions against one catalog (issue 14).

tests/c/spdk_versions.c is built at an older version (probes the catalog
does not list, an argument more, a probe not yet fired, an enum reordered)
and at the version the catalog describes (-DNEWER), each with probegen's
header and with a stand-in for SPDK's own semaphore-free header
(tests/c/spdk_own_header). All four compile with -Werror; verify reports
exactly the real drifts, each once, plus one finding about semaphores for
the builds with SPDK's header (none with --allow-missing-semaphores).
The enum's reordering is the DWARF check's (tests/test_verify.py's drift
tests): these builds carry no debug info.
"""

from __future__ import annotations

import pytest

from helpers import C_DIR, CATALOGS, STUBS, compile_c, readelf_probes, run_cli, spdk_config
from probegen.catalog import load_catalog
from probegen.checks.verify import verify_binaries
from probegen.elf.notes import read_binary
from probegen.generators.header import render_header

CATALOG = CATALOGS / "spdk_versions.yaml"
SPDK_HEADER = C_DIR / "spdk_own_header"
# SPDK builds with -Wall -Wextra -Werror and more; a header must not add warnings.
STRICT = ["-Wmissing-declarations", "-Wstrict-prototypes", "-Wold-style-definition", "-Wshadow",
          "-Wnested-externs", "-Wredundant-decls"]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(CATALOG)


@pytest.fixture(scope="module")
def builds(tmp_path_factory, catalog):
    """{(version, header): binary} for versions older/newer, headers probegen/spdk."""
    out = tmp_path_factory.mktemp("spdk_versions")
    ours = out / "probegen"
    (ours / "spdk_internal").mkdir(parents=True)
    (ours / "spdk_internal" / "usdt.h").write_text(render_header(catalog))
    config = spdk_config(out / "config", usdt=True)
    found = {}
    for version in ("older", "newer"):
        for header, include in (("probegen", ours), ("spdk", SPDK_HEADER)):
            found[version, header] = compile_c(
                [C_DIR / "spdk_versions.c"], out / f"{version}-{header}", include_dirs=[config, STUBS, include],
                defines=["NEWER"] if version == "newer" else [], std="gnu11", extra=STRICT)
    return found


def findings(catalog, binary, **kwargs) -> set[tuple]:
    report = verify_binaries(catalog, [read_binary(binary)], **kwargs)
    return {(f.check, f.probe, f.location.line if f.location.line else "binary") for f in report.findings}


def catalog_line(catalog, name: str) -> int:
    return catalog.probe(name).location.line


def older_drifts(catalog) -> set[tuple]:
    return {
        ("undocumented-probe", "nvmf_ns_change", "binary"),
        ("undocumented-probe", "nvmf_request_io_exec_path", "binary"),
        ("missing-probe", "nvmf_tgt_resume_polling", catalog_line(catalog, "nvmf_tgt_resume_polling")),
        ("arg-count", "nvmf_ctrlr_destruct", catalog_line(catalog, "nvmf_ctrlr_destruct")),
    }


SEMAPHORES = ("semaphore", None, "binary")


def test_probegen_header_at_the_catalogs_version_passes(catalog, builds):
    assert findings(catalog, builds["newer", "probegen"]) == set()


def test_probegen_header_at_an_older_version_gives_its_drifts(catalog, builds):
    assert findings(catalog, builds["older", "probegen"]) == older_drifts(catalog)


def test_spdk_header_is_one_semaphore_finding(catalog, builds):
    assert findings(catalog, builds["newer", "spdk"]) == {SEMAPHORES}
    assert findings(catalog, builds["newer", "spdk"], allow_missing_semaphores=True) == set()
    assert findings(catalog, builds["older", "spdk"]) == older_drifts(catalog) | {SEMAPHORES}
    assert findings(catalog, builds["older", "spdk"], allow_missing_semaphores=True) == older_drifts(catalog)


def test_semaphores_only_on_ticks_and_enabled_check_probes(catalog, builds):
    """probegen's header: a semaphore for the ticks probes and the probe
    marked enabled_check, at every site, none elsewhere, and none for a
    probe the catalog does not know; SPDK's header: none at all."""
    expected = {p.name for p in catalog.probes if p.ticks or p.enabled_check}
    for version in ("older", "newer"):
        notes = readelf_probes(builds[version, "probegen"])
        assert {n["name"] for n in notes if n["semaphore"]} == expected - ({"nvmf_tgt_resume_polling"}
                                                                         if version == "older" else set())
        assert not any(n["semaphore"] for n in readelf_probes(builds[version, "spdk"]))
    older = {n["name"]: n for n in readelf_probes(builds["older", "probegen"])}
    assert older["nvmf_ns_change"]["semaphore"] == 0 and len(older["nvmf_ctrlr_destruct"]["args"]) == 4


def test_same_notes_but_semaphores_with_either_header(builds):
    """Both headers give each site the same name and argument sizes."""
    def shape(binary):
        return sorted((n["name"], tuple(a.split("@")[0] for a in n["args"])) for n in readelf_probes(binary))
    for version in ("older", "newer"):
        assert shape(builds[version, "probegen"]) == shape(builds[version, "spdk"])


def test_cli_text_report(catalog, builds, capsys):
    binary = builds["older", "spdk"]
    code, out, _ = run_cli(capsys, "verify", "--no-debug-info", "-c", CATALOG, binary)
    lines = out.splitlines()
    assert code == 1 and lines[-1].startswith("verify: 5 findings in 1 binary")
    semaphore_lines = [line for line in lines if "semaphore" in line]
    assert len(semaphore_lines) == 1 and semaphore_lines[0].startswith(f"{binary}: error: binary {binary}: no site")
    # nvmf_tgt_resume_polling, the fourth, is not in this older build at all.
    assert "the catalog gives 3 of its probes one (nvmf_ctrlr_destruct, nvmf_poll_group_add_qpair, " \
           "nvmf_subsystem_add_host; 3 sites)" in semaphore_lines[0]
    code, out, _ = run_cli(capsys, "verify", "--no-debug-info", "--allow-missing-semaphores", "-c", CATALOG, binary)
    assert code == 1 and out.splitlines()[-1].startswith("verify: 4 findings")
