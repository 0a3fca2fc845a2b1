"""`probegen verify`: a test catalog, binaries built from it with the
generated header, and drifted builds that must each give their finding at
the catalog's file:line:col."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from helpers import C_DIR, REPO, compile_for, line_of, run_cli, sdt_include_dir
from helpers.pgtest import build_pgtest, write_pgtest
from probegen.catalog import load_catalog
from probegen.elf.notes import read_binary
from probegen.checks.verify import verify_binaries

VARIANTS = {
    "good": (),
    "types": ("DRIFT_TYPES",),
    "arg0": ("DRIFT_ARG0",),
    "count": ("DRIFT_COUNT",),
    "missing": ("DRIFT_MISSING",),
    "extra": ("DRIFT_EXTRA",),
    "all": ("DRIFT_TYPES", "DRIFT_MISSING", "DRIFT_EXTRA"),
}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    out = tmp_path_factory.mktemp("verify")
    catalog = write_pgtest(out / "src")
    sdt = sdt_include_dir(out / "sdt")
    bins = {name: build_pgtest("x86_64", out, name, *defines) for name, defines in VARIANTS.items()}
    bins["nousdt"] = build_pgtest("x86_64", out, "nousdt", usdt=False)
    bins["nosem"] = build_pgtest("x86_64", out, "nosem", semaphores=False)
    bins["aarch64"] = build_pgtest("aarch64", out, "aarch64", sdt=sdt)
    bins["i686"] = build_pgtest("i686", out, "i686", sdt=sdt)
    # Shared build: the probes live in lib/libpgtest.so, found through RUNPATH.
    (out / "shared" / "lib").mkdir(parents=True)
    (out / "shared" / "bin").mkdir()
    lib = compile_for("x86_64", [C_DIR / "elf_verify.c"], out / "shared" / "lib" / "libpgtest.so",
                      include_dirs=[out / "src"], defines=["PGTEST_USDT", "PG_LIBRARY"], extra=["-fPIC", "-shared"])
    link = [f"-L{lib.parent}", "-lpgtest"]
    bins["shared"] = compile_for("x86_64", [C_DIR / "elf_main.c"], out / "shared" / "bin" / "app",
                                 libs=[*link, "-Wl,-rpath,$ORIGIN/../lib"])
    (out / "norpath").mkdir()
    bins["norpath"] = compile_for("x86_64", [C_DIR / "elf_main.c"], out / "norpath" / "app", libs=link)
    bins["lib"] = lib
    return {"catalog": catalog, "text": catalog.read_text(), "bins": bins, "dir": out}


def verify(work, *names, **kwargs):
    catalog = load_catalog(work["catalog"])
    return verify_binaries(catalog, [read_binary(work["bins"][n]) for n in names], **kwargs)


def test_generated_header_build_passes(work, capsys):
    report = verify(work, "good")
    assert report.ok and "OK, 3 probes checked" in report.summary()
    code, out, err = run_cli(capsys, "verify", "-c", work["catalog"], work["bins"]["good"])
    assert code == 0 and not err
    assert out.strip() == "verify: OK, 3 probes checked (3 sites in 1 binary)"


@pytest.mark.parametrize("arch", ["aarch64", "i686"])
def test_cross_targets_pass(work, arch):
    """aarch64 registers and constants; i686 where pointers are 4 bytes."""
    binary = read_binary(work["bins"][arch])
    assert binary.pointer_size == (4 if arch == "i686" else 8)
    report = verify_binaries(load_catalog(work["catalog"]), [binary])
    assert report.ok, [str(f) for f in report.findings]


def test_type_drift_is_reported_at_the_argument(work):
    text = work["text"]
    catalog = str(work["catalog"])
    findings = verify(work, "types").findings
    assert sorted(f.check for f in findings) == ["arg-type", "arg-type"]
    qid, state = sorted(findings, key=lambda f: f.location.line)
    assert qid.location.line == line_of(text, "{name: qid") and qid.location.column == 9
    assert qid.location.path == catalog
    assert str(qid).startswith(f"{catalog}:{qid.location.line}:9: error: probe 'qpair_add' argument 2 'qid': "
                               "catalog says uint16_t (2 bytes, unsigned), binary ")
    assert "has -4@" in str(qid) and "(4 bytes, signed)" in str(qid)
    assert state.location.line == line_of(text, "{name: state,")
    assert "catalog says int (4 bytes, signed)" in state.message and "(8 bytes, signed)" in state.message


def test_arg0_drift(work):
    (finding,) = verify(work, "arg0").findings
    assert finding.check == "arg0" and finding.probe == "qpair_add"
    assert finding.location.line == line_of(work["text"], "- name: qpair_add")
    assert "8-byte clock" in finding.message and "-4@$0" in finding.message


def test_argument_count_drift(work):
    (finding,) = verify(work, "count").findings
    assert finding.check == "arg-count"
    assert "catalog says 3 arguments (arg0 plus 2)" in finding.message and "has 2" in finding.message


def test_a_binary_path_with_braces_is_named_as_given(work, tmp_path):
    """The sites are put into the message when it is made, not substituted for '{site}' after."""
    binary = tmp_path / "{site}" / "count"
    binary.parent.mkdir()
    binary.symlink_to(work["bins"]["count"])
    catalog = load_catalog(work["catalog"])
    (finding,) = verify_binaries(catalog, [read_binary(binary)]).findings
    assert f"binary {binary} site 0x" in finding.message


def test_missing_and_undocumented_probes(work):
    (missing,) = verify(work, "missing").findings
    assert missing.check == "missing-probe" and missing.probe == "tick"
    assert missing.location.line == line_of(work["text"], "- name: tick")
    (extra,) = verify(work, "extra").findings
    assert extra.check == "undocumented-probe" and extra.probe == "secret"
    assert extra.location.path == str(work["bins"]["extra"])
    assert verify(work, "extra", allow_extra=True).ok


def test_all_findings_at_once_exit_1(work, capsys):
    code, out, err = run_cli(capsys, "verify", "-c", work["catalog"], work["bins"]["all"])
    assert code == 1 and not err
    lines = out.strip().splitlines()
    assert len(lines) == 5
    assert lines[-1] == "verify: 4 findings in 1 binary (3 probes checked)"
    assert all(": error: " in line for line in lines[:-1])


def test_no_usdt_build(work, capsys):
    code, out, _ = run_cli(capsys, "verify", "-c", work["catalog"], work["bins"]["nousdt"])
    assert code == 1
    first = out.splitlines()[0]
    assert first.startswith(f"{work['bins']['nousdt']}: error: no .note.stapsdt section")
    assert "SPDK" not in first  # SPDK's configure switch is named only for SPDK's catalog


def test_expect_none(work, capsys):
    """A build configured without USDT passes --expect-none; one with probes
    fails it, one finding per probe, and the JSON says which check."""
    code, out, _ = run_cli(capsys, "verify", "--expect-none", "-c", work["catalog"], work["bins"]["nousdt"])
    assert (code, out.strip()) == (0, "verify: OK, no probe of provider 'pgtest' in 1 binary, as expected")
    good = work["bins"]["good"]
    code, out, _ = run_cli(capsys, "verify", "--expect-none", "-c", work["catalog"], good)
    lines = out.splitlines()
    assert code == 1 and len(lines) == 4 and lines[-1] == "verify: 3 findings in 1 binary (3 probes checked)"
    assert all(line.startswith(f"{good}: error: probe 'pgtest:") and "should have USDT off (PGTEST_USDT not defined)"
               in line for line in lines[:-1])
    code, out, _ = run_cli(capsys, "verify", "--expect-none", "--format", "json", "-c", work["catalog"], good)
    assert code == 1 and {f["check"] for f in json.loads(out)["findings"]} == {"unexpected-probe"}


def test_missing_semaphores(work, capsys):
    """A build without the catalog's semaphores (qpair_add is a ticks probe,
    state_change is marked enabled_check; tick has none) is one finding
    about the binary, not one per probe; none when that is expected."""
    [finding] = verify(work, "nosem").findings
    assert finding.check == "semaphore" and finding.probe is None and finding.location.path == str(work["bins"]["nosem"])
    assert "the catalog gives 2 of its probes one (qpair_add, state_change; 2 sites)" in finding.message
    assert verify(work, "nosem", allow_missing_semaphores=True).ok
    code, out, _ = run_cli(capsys, "verify", "--allow-missing-semaphores", "-c", work["catalog"], work["bins"]["nosem"])
    assert code == 0, out


def test_semaphores_only_where_the_catalog_gives_them(work):
    """The generated header's build: the ticks and enabled_check probes carry
    one, tick (also fired through its typed macro) none."""
    binary = read_binary(work["bins"]["good"])
    semaphores = {probe.name: all(site.semaphore for site in probe.sites) for probe in binary.probes}
    assert semaphores == {"qpair_add": True, "state_change": True, "tick": False}


def test_a_probe_without_its_semaphore_where_others_have_theirs(work):
    """A binary with semaphores where one probe's sites lack the catalog's: a finding at that probe."""
    binary = read_binary(work["bins"]["good"])
    probes = tuple(replace(p, sites=tuple(replace(s, semaphore=0) for s in p.sites)) if p.name == "state_change"
                   else p for p in binary.probes)
    [finding] = verify_binaries(load_catalog(work["catalog"]), [replace(binary, probes=probes)]).findings
    address = next(p for p in probes if p.name == "state_change").sites[0].address
    assert finding.check == "semaphore" and finding.probe == "state_change" and finding.binary == binary.path
    assert finding.message == (f"probe 'state_change': the catalog gives it a semaphore (enabled_check: true) "
                               f"but binary {binary.path} site {address:#x} has none")


def test_follow_shared_libraries(work, capsys):
    catalog = work["catalog"]
    code, out, _ = run_cli(capsys, "verify", "-c", catalog, work["bins"]["shared"])
    assert code == 1 and "no .note.stapsdt section" in out
    code, out, err = run_cli(capsys, "verify", "-c", catalog, "--follow", work["bins"]["shared"])
    assert code == 0, out + err
    assert "2 binaries" in out
    # Without RPATH the library is found only through --lib-dir.
    code, out, err = run_cli(capsys, "verify", "-c", catalog, "--follow", work["bins"]["norpath"])
    assert code == 1 and "libpgtest.so not found" in err
    code, out, err = run_cli(capsys, "verify", "-c", catalog, "--follow", "--lib-dir",
                             work["bins"]["lib"].parent, work["bins"]["norpath"])
    assert code == 0, out + err


def test_unreadable_file_exit_2_others_checked(work, tmp_path, capsys):
    missing = tmp_path / "nope"
    code, out, err = run_cli(capsys, "verify", "-c", work["catalog"], missing, work["bins"]["types"])
    assert code == 2
    assert err == f"{missing}: error: no such file\n"
    assert "argument 2 'qid'" in out and "1 file(s) could not be read" in out


def test_bad_catalog_exit_2(work, tmp_path, capsys):
    code, _, err = run_cli(capsys, "verify", "-c", tmp_path / "none.yaml", work["bins"]["good"])
    assert code == 2 and "no such catalog file" in err and "Traceback" not in err


def test_json_report(work, capsys):
    code, out, _ = run_cli(capsys, "verify", "-c", work["catalog"], "--format", "json", work["bins"]["all"])
    assert code == 1
    data = json.loads(out)
    assert data["ok"] is False and data["probes_checked"] == 3 and len(data["findings"]) == 4
    qid = next(f for f in data["findings"] if f["probe"] == "qpair_add")
    assert qid["check"] == "arg-type" and qid["line"] == line_of(work["text"], "{name: qid")
    assert qid["binary"] == str(work["bins"]["all"])


def test_junit_report(work, tmp_path, capsys):
    report = tmp_path / "verify.xml"
    code, _, _ = run_cli(capsys, "verify", "-c", work["catalog"], "--format", "junit", "-o", report,
                         work["bins"]["all"], tmp_path / "missing")
    assert code == 2
    suite = ET.parse(report).getroot().find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == {"qpair_add", "state_change", "tick", str(work["bins"]["all"]), str(tmp_path / "missing")}
    assert cases["qpair_add"].find("failure") is not None
    assert cases["tick"].find("failure").get("type") == "missing-probe"
    assert "secret" in cases[str(work["bins"]["all"])].find("failure").text
    assert cases[str(tmp_path / "missing")].find("error") is not None
    assert suite.get("failures") == "4" and suite.get("errors") == "1"


def test_real_spdk_catalog(tmp_path, capsys):
    """The project's probes.yaml against tests/c/spdk_fire_all.c built with
    the generated SPDK header (every SPDK probe, SPDK's macros)."""
    from probegen.generators.header import render_header

    source = C_DIR / "spdk_fire_all.c"
    if not source.exists():
        pytest.skip("tests/c/spdk_fire_all.c not there yet")
    catalog = load_catalog(REPO / "probes.yaml")
    (tmp_path / "spdk_internal").mkdir()
    (tmp_path / "spdk_internal" / "usdt.h").write_text(render_header(catalog))
    (tmp_path / "spdk").mkdir()
    (tmp_path / "spdk" / "config.h").write_text("#define SPDK_CONFIG_USDT 1\n")
    (tmp_path / "spdk" / "env.h").write_text("#include <stdint.h>\nuint64_t spdk_get_ticks(void);\n")
    try:
        binary = compile_for("x86_64", [source], tmp_path / "fire_all", include_dirs=[tmp_path])
    except AssertionError as exc:
        pytest.skip(f"spdk_fire_all.c does not build on its own: {str(exc)[:200]}")
    code, out, _ = run_cli(capsys, "verify", "-c", REPO / "probes.yaml", binary)
    assert code == 0, out
    assert f"{len(catalog.probes)} probes checked" in out


# -- drift the notes cannot show: enums and member paths in the DWARF ----------
@pytest.fixture(scope="module")
def drift(tmp_path_factory):
    from helpers.drift import build_drift

    return build_drift(tmp_path_factory.mktemp("drift"))


def test_debug_info_drift_at_the_catalog_entries(drift, capsys):
    """One catalog, the program at two versions: the notes are the same, so
    only the DWARF shows v25.09's reordered enum and renamed member, each at
    the catalog line that is wrong for that binary."""
    from helpers.drift import DRIFT_CATALOG

    text = DRIFT_CATALOG.read_text()
    code, out, _ = run_cli(capsys, "verify", "-c", DRIFT_CATALOG, drift["master"])
    assert (code, out.strip()) == (0, "verify: OK, 2 probes checked (2 sites in 1 binary); 1 enum and "
                                      "2 member paths checked against debug info")
    old = drift["v25_09"]
    code, out, _ = run_cli(capsys, "verify", "-c", DRIFT_CATALOG, old)
    at = f"{DRIFT_CATALOG}:{{}}:{{}}: error: "
    assert code == 1
    assert out.splitlines() == [
        at.format(line_of(text, "- NVMF_TGT_FINI_STOP_SUBSYSTEMS"), 9)
        + f"enum nvmf_tgt_state: NVMF_TGT_FINI_STOP_SUBSYSTEMS is 5 in the catalog but 6 in {old} "
          "(scripts made from the catalog print another name for it there)",
        at.format(line_of(text, "- NVMF_TGT_FINI_STOP_LISTEN"), 9)
        + f"enum nvmf_tgt_state: NVMF_TGT_FINI_STOP_LISTEN is 6 in the catalog but 5 in {old} "
          "(scripts made from the catalog print another name for it there)",
        at.format(line_of(text, "members: [qid, cntlid]"), 24)
        + f"probe 'qpair_event' argument 0 'qpair': member 'cntlid': in the debug info of {old}: "
          "struct spdk_nvmf_qpair has no member 'cntlid' (members: ctrlr, ctrlr_id, qid)",
        "verify: 3 findings in 1 binary (2 probes checked); 1 enum and 2 member paths checked against debug info",
    ]
    code, out, _ = run_cli(capsys, "verify", "-c", DRIFT_CATALOG, "--no-debug-info", old)
    assert (code, out.strip()) == (0, "verify: OK, 2 probes checked (2 sites in 1 binary)")
    code, out, _ = run_cli(capsys, "verify", "-c", DRIFT_CATALOG, "--format", "json", old)
    checks = [(f["check"], f["line"]) for f in json.loads(out)["findings"]]
    assert [c for c, _ in checks] == ["enum-drift", "enum-drift", "member-drift"]


def test_debug_info_drift_enumerators_missing_and_extra(drift, tmp_path):
    """A catalog enumerator the binary lacks, and the binary's enumerators
    the catalog lacks; a stripped binary is checked by its notes alone, and
    the summary says the types were not."""
    import shutil
    import subprocess

    from helpers.drift import DRIFT_CATALOG
    from probegen.checks.drift import open_debug_infos

    text = DRIFT_CATALOG.read_text().replace("- NVMF_TGT_STOPPED = 10", "- NVMF_TGT_ERROR = 11")
    (tmp_path / "drift.yaml").write_text(text)
    catalog = load_catalog(tmp_path / "drift.yaml")
    with open_debug_infos(catalog, [drift["master"]]) as infos:
        report = verify_binaries(catalog, [read_binary(drift["master"])], debug_infos=infos)
    messages = [(f.location.line, f.check, f.message) for f in report.findings]
    assert messages == [
        (line_of(text, "- name: nvmf_tgt_state"), "enum-drift",
         f"enum nvmf_tgt_state in {drift['master']} has enumerator the catalog lacks: NVMF_TGT_STOPPED = 10"),
        (line_of(text, "- NVMF_TGT_ERROR"), "enum-drift",
         f"enum nvmf_tgt_state: NVMF_TGT_ERROR (= 11) is not in {drift['master']}'s enum nvmf_tgt_state"),
    ]
    strip = shutil.which("strip")
    if strip is None:
        pytest.skip("strip (binutils) is not installed: no binary without debug info")
    stripped = tmp_path / "stripped"
    subprocess.run([strip, "-g", "-o", stripped, drift["v25_09"]], check=True)
    with open_debug_infos(catalog, [stripped]) as infos:
        report = verify_binaries(catalog, [read_binary(stripped)], debug_infos=infos)
    assert report.ok and report.summary().endswith("; enums and members not checked: no binary has debug info")


def test_debug_info_an_enum_without_enumerators_takes_the_binarys(drift, tmp_path):
    """Its names come from the binary, so the binary's values are no drift (v25.09's order included)."""
    from helpers.drift import DRIFT_CATALOG
    from probegen.checks.drift import open_debug_infos

    text = DRIFT_CATALOG.read_text()
    text = text[:text.index("    enumerators:")] + text[text.index("\nprobes:"):]
    (tmp_path / "drift.yaml").write_text(text)
    catalog = load_catalog(tmp_path / "drift.yaml")
    with open_debug_infos(catalog, [drift["v25_09"]]) as infos:
        report = verify_binaries(catalog, [read_binary(drift["v25_09"])], debug_infos=infos)
    assert [f.check for f in report.findings] == ["member-drift"]


def test_a_librarys_library_is_found_through_the_executables_rpath(tmp_path):
    """ld.so searches an object without DT_RUNPATH through the DT_RPATH of its loaders too, up to
    the executable: lib/liba.so, loaded by the executable, finds lib/libb.so by the executable's RPATH."""
    from probegen.elf.deps import resolve_dependencies

    lib = tmp_path / "lib"
    lib.mkdir()
    (tmp_path / "b.c").write_text("int b(void) { return 1; }\n")
    (tmp_path / "a.c").write_text("int b(void);\nint a(void) { return b(); }\n")
    (tmp_path / "main.c").write_text("int a(void);\nint main(void) { return a(); }\n")
    gcc = ["gcc", "-shared", "-fPIC", "-o"]
    subprocess.run([*gcc, lib / "libb.so", tmp_path / "b.c"], check=True)
    subprocess.run([*gcc, lib / "liba.so", tmp_path / "a.c", f"-L{lib}", "-lb"], check=True)
    subprocess.run(["gcc", "-o", tmp_path / "app", tmp_path / "main.c", f"-L{lib}", "-la", f"-Wl,-rpath-link,{lib}",
                    "-Wl,--disable-new-dtags,-rpath,$ORIGIN/lib"], check=True)
    assert resolve_dependencies(tmp_path / "app") == ([str(lib / "liba.so"), str(lib / "libb.so")], [])
