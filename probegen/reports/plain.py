"""JSON and JUnit XML. verify's shapes are its own (CI users parse them); lint's and check's
follow them: a findings list with file, line and column, and a JUnit test case per thing checked."""

from probegen.errors import printable
from probegen.reports import Outcome

JSON_VERSION = 1


def _place(location) -> dict:
    return {"file": location.path, "line": location.line or None, "column": location.column or None,
            "location": str(location)}


def verify_json(report, errors=()) -> dict:
    """For a probegen.checks.verify.Report."""
    return {
        "version": JSON_VERSION,
        "ok": report.ok and not errors,
        "catalog": str(report.catalog.path),
        "binaries": [b.path for b in report.binaries],
        "probes_checked": len(report.catalog.probes),
        "sites_checked": report.sites_checked,
        "findings": [{"check": f.check, "probe": f.probe, "binary": f.binary, **_place(f.location),
                      "message": f.message} for f in report.findings],
        "errors": [{"path": e.location.path, "message": e.message} for e in errors],
        "summary": report.summary(),
    }


def verify_junit(report, errors=()) -> str:
    """A test case per catalog probe (failed by its findings), one per binary for findings about
    the binary or probes the catalog lacks, and an errored case per unreadable file."""
    by_probe: dict[str, list] = {probe.name: [] for probe in report.catalog.probes}
    by_binary: dict[str, list] = {binary.path: [] for binary in report.binaries}  # read_binaries reads each once
    for finding in report.findings:
        if finding.probe in by_probe:  # not for a finding about no probe, or one the catalog lacks
            by_probe[finding.probe].append(finding)
        else:
            by_binary.setdefault(finding.binary or "", []).append(finding)
    probe_class, binary_class = f"probegen.checks.verify.{report.catalog.provider}", "probegen.checks.verify.binary"
    cases = [(probe_class, name, findings, None) for name, findings in by_probe.items()]
    cases += [(binary_class, path, findings, None) for path, findings in by_binary.items()]
    cases += [(binary_class, error.location.path, [], error.message) for error in errors]
    return _junit("probegen verify", cases)


def outcome_json(outcome: Outcome) -> dict:
    return {
        "version": JSON_VERSION,
        "command": outcome.command,
        "ok": not outcome.results and not outcome.problems,
        "catalog": outcome.catalog,
        "checked": list(outcome.subjects),
        "findings": [{"rule": r.rule, "level": "error", **_place(r.location), "message": r.message}
                     for r in outcome.results],
        "errors": [{"path": p.location.path, "line": p.location.line or None, "column": p.location.column or None,
                    "message": p.message} for p in outcome.problems],
        "summary": outcome.summary,
    }


def outcome_junit(outcome: Outcome) -> str:
    """A test case per checked file, failed by its findings; an errored one per unreadable file."""
    errors = {p.location.path: p.message for p in outcome.problems}
    paths = [*outcome.subjects, *(result.location.path for result in outcome.results), *errors]
    by_file: dict[str, list] = {path: [] for path in paths}
    for result in outcome.results:
        by_file[result.location.path].append(result)
    return _junit(f"probegen {outcome.command}", [(f"probegen.{outcome.command}", path, results, errors.get(path))
                                                 for path, results in by_file.items()])


def _junit(name: str, cases) -> str:
    """``cases``: (class name, name, failures (Diagnostics), error message or None).
    printable(): names and messages quote file names, and XML 1.0 allows no control characters."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites")
    suite = ET.SubElement(root, "testsuite", {
        "name": name, "tests": str(len(cases)), "failures": str(sum(1 for case in cases if case[2])),
        "errors": str(sum(1 for case in cases if case[3] is not None)), "skipped": "0",
    })
    for classname, case_name, failures, error in cases:
        case = ET.SubElement(suite, "testcase", {"classname": classname, "name": printable(case_name)})
        if failures:
            failure = ET.SubElement(case, "failure", {
                "message": printable(failures[0].message) if len(failures) == 1 else f"{len(failures)} findings",
                "type": ",".join(sorted({f.rule for f in failures})),
            })
            failure.text = "\n".join(map(str, failures))
        if error is not None:
            ET.SubElement(case, "error", {"message": printable(error), "type": "input"})
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
