"""--format sarif and --format github of verify, lint and check, on real
inputs: binaries built with gcc against the generated header (one with
drifted probes), the lint corpus, and generated files made stale.

SARIF logs are validated against the SARIF 2.1.0 JSON schema that the
sdist of sarif-om (Microsoft's SARIF object model) ships; annotations are
parsed back the way the GitHub runner reads workflow commands.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from helpers import fetch, line_of, run_cli
from helpers.pgtest import build_pgtest, write_pgtest
from probegen.catalog import load_catalog
from probegen.elf.notes import read_binary
from probegen.checks.lint import lint_file
from probegen.reports.github import escape_data, escape_property
from probegen.reports.rules import RULES
from probegen.checks.verify import verify_binaries
from probegen.reports.plain import verify_json

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "lint_corpus"
_URI_REFERENCE = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")


# -- the SARIF schema -------------------------------------------------------
@pytest.fixture(scope="session")
def sarif_schema():
    """The SARIF 2.1.0 schema (PROBEGEN_SARIF_SCHEMA names a local copy)."""
    local = os.environ.get("PROBEGEN_SARIF_SCHEMA")
    schema = json.loads(Path(local).read_text()) if local else fetch.sarif_schema()
    if schema is None:
        pytest.skip(f"no SARIF 2.1.0 schema in {fetch.SARIF_CACHE}: tools/setup.sh --test fetches it")
    return schema


def validate_sarif(log: dict, schema: dict, command: str) -> dict:
    """The log against the schema, plus what GitHub code scanning needs
    beyond it: rule ids that the driver declares, ruleIndex pointing at
    them, one run. Returns the run."""
    from jsonschema import Draft4Validator

    validator = Draft4Validator(schema, format_checker=Draft4Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "probegen" and driver["version"]
    ids = [rule["id"] for rule in driver["rules"]]
    assert ids == list(RULES[command]) and len(set(ids)) == len(ids)
    for result in run["results"]:
        assert ids[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] == "error" and result["message"]["text"]
    assert run["automationDetails"]["id"] == f"probegen/{command}/"
    # The schema's "uri" format goes unchecked without rfc3987: URI references
    # are checked here (RFC 3986 characters; a relative one has no scheme).
    places = [loc["physicalLocation"]["artifactLocation"]
              for item in run["results"] + run["invocations"][0].get("toolExecutionNotifications", [])
              for loc in item.get("locations", [])]
    for artifact in places:
        assert _URI_REFERENCE.fullmatch(artifact["uri"]), artifact
        assert artifact["uri"].startswith("file:///") != ("uriBaseId" in artifact), artifact
        if "uriBaseId" in artifact:
            assert ":" not in artifact["uri"].split("/")[0]
            assert artifact["uriBaseId"] in run["originalUriBaseIds"]
    return run


def sarif(capsys, *argv):
    code, out, err = run_cli(capsys, *argv, "--format", "sarif")
    return code, json.loads(out), err


def where(result) -> tuple:
    """(uri, uriBaseId, startLine, startColumn) of a result or notification."""
    place = result["locations"][0]["physicalLocation"]
    region = place.get("region", {})
    artifact = place["artifactLocation"]
    return artifact["uri"], artifact.get("uriBaseId"), region.get("startLine"), region.get("startColumn")


# -- reading annotations as the runner does -----------------------------------
_COMMAND = re.compile(r"^::(error|warning|notice)(?: (?P<props>[^:]*))?::(?P<message>.*)$")


def unescape(text: str, prop: bool = False) -> str:
    if prop:
        text = text.replace("%3A", ":").replace("%2C", ",")
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def parse_annotations(out: str) -> tuple[list[dict], list[str]]:
    """(annotations as dicts of their unescaped properties plus "level" and
    "message", the other lines)."""
    annotations, others = [], []
    for line in out.splitlines():
        match = _COMMAND.match(line)
        if not match:
            assert not line.startswith("::"), line
            others.append(line)
            continue
        fields = {"level": match.group(1), "message": unescape(match.group("message"))}
        for prop in (match.group("props") or "").split(","):
            key, _, value = prop.partition("=")
            fields[key] = unescape(value, prop=True)
        annotations.append(fields)
    return annotations, others


# -- verify ----------------------------------------------------------------
@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The pgtest catalog and two builds: one true to it, one with type
    drift, a missing and an undocumented probe (4 findings)."""
    out = tmp_path_factory.mktemp("formats-verify")
    catalog = write_pgtest(out / "src")
    return {"dir": out, "catalog": catalog, "text": catalog.read_text(),
            "good": build_pgtest("x86_64", out, "good"),
            "drift": build_pgtest("x86_64", out, "drift", "DRIFT_TYPES", "DRIFT_MISSING", "DRIFT_EXTRA")}


def test_verify_sarif_places_each_finding_in_the_catalog(built, sarif_schema, capsys, monkeypatch):
    # From the build directory, as CI runs it: the catalog is under the
    # working directory, so its URI is relative to %SRCROOT%.
    monkeypatch.chdir(built["dir"])
    code, log, err = sarif(capsys, "verify", "-c", "src/probes.yaml", "drift")
    assert code == 1 and not err
    run = validate_sarif(log, sarif_schema, "verify")
    assert run["invocations"][0]["executionSuccessful"] is True
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == built["dir"].as_uri() + "/"
    findings = verify_binaries(load_catalog("src/probes.yaml"), [read_binary("drift")]).findings
    assert [(r["ruleId"], r["message"]["text"]) for r in run["results"]] == [(f.check, f.message) for f in findings]
    by_rule = {}
    for result in run["results"]:
        by_rule.setdefault(result["ruleId"], []).append(where(result))
    qid_line = line_of(built["text"], "{name: qid")
    assert ("src/probes.yaml", "%SRCROOT%", qid_line, 9) in by_rule["arg-type"]
    assert by_rule["missing-probe"] == [("src/probes.yaml", "%SRCROOT%", line_of(built["text"], "- name: tick"), 5)]
    assert by_rule["undocumented-probe"] == [("drift", "%SRCROOT%", None, None)]


def test_verify_sarif_outside_the_working_directory_and_clean(built, sarif_schema, capsys):
    # The repository is the working directory: the tmp paths are file: URIs.
    code, log, _ = sarif(capsys, "verify", "-c", built["catalog"], built["drift"])
    run = validate_sarif(log, sarif_schema, "verify")
    assert code == 1
    assert {where(r)[:2] for r in run["results"]} == {
        (built["catalog"].as_uri(), None), (built["drift"].as_uri(), None)}
    code, log, _ = sarif(capsys, "verify", "-c", built["catalog"], built["good"])
    run = validate_sarif(log, sarif_schema, "verify")
    assert code == 0 and run["results"] == [] and run["invocations"][0]["executionSuccessful"] is True


def test_verify_sarif_unreadable_binary_is_a_notification_exit_2(built, sarif_schema, capsys, tmp_path):
    missing = tmp_path / "no such binary"
    code, log, err = sarif(capsys, "verify", "-c", built["catalog"], built["drift"], missing)
    assert code == 2 and "no such file" in err
    run = validate_sarif(log, sarif_schema, "verify")
    assert len(run["results"]) == 4
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is False
    (notification,) = invocation["toolExecutionNotifications"]
    assert notification["message"]["text"] == "no such file"
    assert where(notification) == (missing.as_uri(), None, None, None)
    assert "%20" in missing.as_uri()
    # Nothing readable at all: still a log, for the upload step.
    code, log, _ = sarif(capsys, "verify", "-c", built["catalog"], missing)
    run = validate_sarif(log, sarif_schema, "verify")
    assert code == 2 and run["results"] == [] and run["invocations"][0]["executionSuccessful"] is False


def test_verify_github_annotations(built, capsys, monkeypatch):
    monkeypatch.chdir(built["dir"])
    code, out, err = run_cli(capsys, "verify", "-c", "src/probes.yaml", "--format", "github", "drift")
    assert code == 1 and not err
    annotations, others = parse_annotations(out)
    assert others == ["verify: 4 findings in 1 binary (3 probes checked)"]
    assert len(annotations) == 4 and {a["level"] for a in annotations} == {"error"}
    qid = next(a for a in annotations if "'qid'" in a["message"])
    assert (qid["file"], qid["line"], qid["col"]) == ("src/probes.yaml", str(line_of(built["text"], "{name: qid")), "9")
    assert qid["title"] == "probegen verify: arg-type"
    extra = next(a for a in annotations if a["title"] == "probegen verify: undocumented-probe")
    assert extra["file"] == "drift" and "line" not in extra and "col" not in extra


def test_verify_json_and_junit_unchanged(built, capsys, tmp_path):
    """The CI formats verify had keep their shape: json is verify_json's."""
    code, out, _ = run_cli(capsys, "verify", "-c", built["catalog"], "--format", "json", built["drift"])
    expected = verify_json(verify_binaries(load_catalog(built["catalog"]), [read_binary(built["drift"])]))
    assert code == 1 and json.loads(out) == expected
    report = tmp_path / "verify.xml"
    code, out, _ = run_cli(capsys, "verify", "-c", built["catalog"], "--format", "junit", "-o", report, built["drift"])
    suite = ET.parse(report).getroot().find("testsuite")
    assert code == 1 and not out and suite.get("name") == "probegen verify" and suite.get("failures") == "4"


def test_verify_sarif_to_a_file(built, sarif_schema, capsys, tmp_path):
    report = tmp_path / "verify.sarif"
    code, out, _ = run_cli(capsys, "verify", "-c", built["catalog"], "--format", "sarif", "-o", report, built["good"])
    assert code == 0 and out == ""
    validate_sarif(json.loads(report.read_text()), sarif_schema, "verify")


# -- lint --------------------------------------------------------------------
DRIFT = sorted(CORPUS.glob("drift_*.bt"))


def test_lint_sarif_has_every_finding_with_its_rule(sarif_schema, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    scripts = [str(p.relative_to(REPO)) for p in DRIFT] + ["tests/lint_corpus/broken.bt"]
    code, log, err = sarif(capsys, "lint", "-c", "probes.yaml", *scripts)
    assert code == 2 and "broken.bt:4:29: error: cannot parse" in err
    run = validate_sarif(log, sarif_schema, "lint")
    catalog = load_catalog("probes.yaml")
    expected = [d for p in scripts[:-1] for d in lint_file(p, catalog)]
    assert [(r["ruleId"], r["message"]["text"], where(r)) for r in run["results"]] == [
        (d.rule, d.message, (d.location.path, "%SRCROOT%", d.location.line, d.location.column)) for d in expected]
    assert {r["ruleId"] for r in run["results"]} >= {
        "unknown-probe", "wrong-provider", "arg-out-of-range", "str-of-non-string", "printf-type",
        "printf-arg-count", "printf-conversion"}
    (notification,) = run["invocations"][0]["toolExecutionNotifications"]
    assert where(notification) == ("tests/lint_corpus/broken.bt", "%SRCROOT%", 4, 29)
    assert notification["message"]["text"] == "cannot parse: expected ',' or ')', found ';'"


def test_lint_github_json_junit(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    script = "tests/lint_corpus/drift_args.bt"
    findings = lint_file(script, load_catalog("probes.yaml"))
    code, out, _ = run_cli(capsys, "lint", "-c", "probes.yaml", "--format", "github", script)
    annotations, others = parse_annotations(out)
    assert code == 1 and others == [f"{len(findings)} findings in 1 script"]
    assert [(a["file"], int(a["line"]), int(a["col"]), a["title"], a["message"]) for a in annotations] == [
        (script, d.location.line, d.location.column, f"probegen lint: {d.rule}", d.message) for d in findings]
    assert any("%d" in a["message"] for a in annotations)  # '%' went through as %25 and back

    code, out, _ = run_cli(capsys, "lint", "-c", "probes.yaml", "--format", "json", script,
                           "tests/lint_corpus/clean_nvmf.bt")
    data = json.loads(out)
    assert code == 1 and data["ok"] is False and data["command"] == "lint"
    assert [(f["rule"], f["line"], f["column"]) for f in data["findings"]] == [
        (d.rule, d.location.line, d.location.column) for d in findings]

    report = tmp_path / "lint.xml"
    code, _, _ = run_cli(capsys, "lint", "-c", "probes.yaml", "--format", "junit", "-o", report, script,
                         "tests/lint_corpus/clean_nvmf.bt", "tests/lint_corpus/broken.bt")
    cases = {c.get("name"): c for c in ET.parse(report).getroot().iter("testcase")}
    assert code == 2 and set(cases) == {script, "tests/lint_corpus/clean_nvmf.bt", "tests/lint_corpus/broken.bt"}
    assert "arg-out-of-range" in cases[script].find("failure").get("type")
    assert len(cases["tests/lint_corpus/clean_nvmf.bt"]) == 0
    assert cases["tests/lint_corpus/broken.bt"].find("error") is not None


# -- check -------------------------------------------------------------------
CHECK_CATALOG = """\
provider: demo
outputs:
  header: out/demo_usdt.h
  bpftrace: out/bpf
probes:
  - name: hit
    group: main
    doc: A hit.
    args:
      - {name: n, type: int}
"""


def generated(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "probes.yaml").write_text(CHECK_CATALOG)
    proc = subprocess.run([sys.executable, "-m", "probegen", "generate", "-c", "probes.yaml"], cwd=directory,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return directory


def test_check_formats_name_the_first_stale_line(sarif_schema, capsys, monkeypatch, tmp_path):
    work = generated(tmp_path / "repo")
    monkeypatch.chdir(work)
    code, log, _ = sarif(capsys, "check")
    run = validate_sarif(log, sarif_schema, "check")
    assert code == 0 and run["results"] == []
    assert run_cli(capsys, "check", "--format", "github") == (0, "4 generated file(s) up to date\n", "")

    header = work / "out" / "demo_usdt.h"
    lines = header.read_text().splitlines(keepends=True)
    lines[6] = "/* edited by hand */\n"
    header.write_text("".join(lines))
    scripts = sorted((work / "out" / "bpf").iterdir())
    scripts[0].unlink()
    code, log, err = sarif(capsys, "check")
    run = validate_sarif(log, sarif_schema, "check")
    assert code == 1 and "2 of 4 generated file(s) stale" in err
    assert sorted(where(r) for r in run["results"]) == sorted([
        ("out/demo_usdt.h", "%SRCROOT%", 7, None),
        (f"out/bpf/{scripts[0].name}", "%SRCROOT%", None, None)])
    assert {r["ruleId"] for r in run["results"]} == {"stale-file"}

    code, out, _ = run_cli(capsys, "check", "--format", "github")
    annotations, others = parse_annotations(out)
    assert code == 1 and others == ["2 of 4 generated file(s) stale"]
    stale_header = next(a for a in annotations if a["file"] == "out/demo_usdt.h")
    assert stale_header["line"] == "7" and stale_header["title"] == "probegen check: stale-file"
    assert stale_header["message"].startswith("stale: differs from what probes.yaml generates")

    code, out, _ = run_cli(capsys, "check", "--format", "json")
    data = json.loads(out)
    assert code == 1 and {(f["file"], f["line"]) for f in data["findings"]} == {
        ("out/demo_usdt.h", 7), (f"out/bpf/{scripts[0].name}", None)}
    code, out, _ = run_cli(capsys, "check", "--format", "junit")
    suite = ET.fromstring(out).find("testsuite")
    assert code == 1 and (suite.get("tests"), suite.get("failures")) == ("4", "2")


def test_check_formats_say_a_file_only_lost_its_mode(capsys, monkeypatch, tmp_path):
    work = generated(tmp_path / "repo")
    monkeypatch.chdir(work)
    script = sorted((work / "out" / "bpf").iterdir())[0]
    script.chmod(0o644)
    code, out, _ = run_cli(capsys, "check", "--format", "json")
    (finding,) = json.loads(out)["findings"]
    assert code == 1 and (finding["file"], finding["line"]) == (f"out/bpf/{script.name}", None)
    assert finding["message"].startswith("not executable, unlike what probes.yaml generates")


# -- hostile paths and messages -----------------------------------------------
HOSTILE = "we,ird:dir%41\n::warning file=x::forged\r"


def test_escaping_round_trips():
    text = "a%b,c:d\ne\rf%0A::error::x"
    assert "\n" not in escape_data(text) and "\r" not in escape_data(text)
    assert unescape(escape_data(text)) == text
    prop = escape_property(text)
    assert not set(",:\n\r") & set(prop) and unescape(prop, prop=True) == text
    assert escape_data("\x1b[31mred") == "\\x1b[31mred"  # no terminal escapes into the log


def test_hostile_catalog_path_cannot_break_annotations(sarif_schema, capsys, monkeypatch, tmp_path):
    """A catalog in a directory whose name has ',', ':', '%' and newlines
    (and a forged workflow command): every annotation stays one line, its
    file property and message read back exactly."""
    work = generated(tmp_path / HOSTILE)
    header = work / "out" / "demo_usdt.h"
    header.write_text(header.read_text().replace("#define", "# define", 1))
    monkeypatch.chdir(tmp_path)
    catalog = f"{HOSTILE}/probes.yaml"
    code, out, _ = run_cli(capsys, "check", "-c", catalog, "--format", "github")
    assert code == 1
    annotations, others = parse_annotations(out)
    assert others == ["1 of 4 generated file(s) stale"] and len(out.splitlines()) == 2
    (annotation,) = annotations
    assert annotation["level"] == "error" and annotation["file"] == f"{HOSTILE}/out/demo_usdt.h"
    assert annotation["message"].startswith(f"stale: differs from what {catalog} generates")

    code, log, _ = sarif(capsys, "check", "-c", catalog)
    run = validate_sarif(log, sarif_schema, "check")
    (result,) = run["results"]
    from urllib.parse import unquote
    uri, base, _, _ = where(result)
    assert base == "%SRCROOT%" and unquote(uri) == f"{HOSTILE}/out/demo_usdt.h" and "\n" not in uri

    # A catalog error in that file: annotated at its line and column, exit 2.
    (work / "probes.yaml").write_text(CHECK_CATALOG.replace("    group: main\n", ""))
    code, out, err = run_cli(capsys, "check", "-c", catalog, "--format", "github")
    annotations, _ = parse_annotations(out)
    assert code == 2 and "missing required key 'group'" in err
    (annotation,) = annotations
    assert (annotation["file"], annotation["title"]) == (catalog, "probegen check: catalog-error")
    assert annotation["line"] == "6" and annotation["col"] == "5"
    code, log, _ = sarif(capsys, "check", "-c", catalog)
    run = validate_sarif(log, sarif_schema, "check")
    assert code == 2 and run["invocations"][0]["executionSuccessful"] is False
    assert [r["ruleId"] for r in run["results"]] == ["catalog-error"]


def test_missing_catalog_in_ci_formats(sarif_schema, capsys, tmp_path):
    code, log, err = sarif(capsys, "lint", "-c", tmp_path / "none.yaml", CORPUS / "clean_nvmf.bt")
    assert code == 2 and "no such catalog file" in err
    run = validate_sarif(log, sarif_schema, "lint")
    (notification,) = run["invocations"][0]["toolExecutionNotifications"]
    assert notification["message"]["text"] == "no such catalog file"



def test_sarif_of_a_file_name_not_utf8(sarif_schema, capsys, monkeypatch, tmp_path):
    """A script or binary named with a byte that is not UTF-8 (bug: quote() raised UnicodeEncodeError,
    and a message quoting the name could not be written with -o): the URI has the byte as %FF,
    a message has the lone surrogate as JSON's escape, and the file is UTF-8."""
    from probegen.errors import Diagnostic, Location
    from probegen.reports import Outcome, render

    monkeypatch.chdir(tmp_path)
    (tmp_path / "probes.yaml").write_bytes((REPO / "probes.yaml").read_bytes())
    name = os.fsdecode(b"a\xffb.bt")
    Path(name).write_text("usdt:./x:spdk:nosuch_probe_zz { }\n")
    code, _, _ = run_cli(capsys, "lint", name, "--format", "sarif", "-o", "out.sarif")
    run = validate_sarif(json.loads(Path("out.sarif").read_bytes().decode("utf-8")), sarif_schema, "lint")
    assert code == 1 and where(run["results"][0]) == ("a%FFb.bt", "%SRCROOT%", 1, 15)
    outcome = Outcome("verify", "probes.yaml", "1 finding", [Diagnostic(Location(name), f"no site in {name}",
                                                                         "missing-probe")])
    (result,) = json.loads(render(outcome, "sarif").encode("utf-8"))["runs"][0]["results"]
    assert result["message"]["text"] == f"no site in {name}"
