"""JSON and JUnit XML for lint and check, in the shape of verify's
(probegen.checks.verify.report_json/report_junit): a findings list with file,
line and column; one test case per checked file."""

from __future__ import annotations

from probegen.errors import printable
from probegen.reports import Outcome

JSON_VERSION = 1


def outcome_json(outcome: Outcome) -> dict:
    """``{"version", "command", "ok", "catalog", "checked", "findings":
    [{"rule", "level", "file", "line", "column", "location", "message"}],
    "errors": [{"path", "line", "column", "message"}], "summary"}``"""
    return {
        "version": JSON_VERSION,
        "command": outcome.command,
        "ok": outcome.ok,
        "catalog": outcome.catalog,
        "checked": list(outcome.subjects),
        "findings": [
            {"rule": r.rule, "level": r.level, "file": r.location.path, "line": r.location.line or None,
             "column": r.location.column or None, "location": str(r.location), "message": r.message}
            for r in outcome.results
        ],
        "errors": [
            {"path": p.location.path, "line": p.location.line or None, "column": p.location.column or None,
             "message": p.message}
            for p in outcome.problems
        ],
        "summary": outcome.summary,
    }


def outcome_junit(outcome: Outcome) -> str:
    """One test case per checked file, failed by its findings; an errored
    case per file that could not be read."""
    import xml.etree.ElementTree as ET

    by_file: dict[str, list] = {subject: [] for subject in outcome.subjects}
    for result in outcome.results:
        by_file.setdefault(result.location.path, []).append(result)
    errors = {p.location.path: p.message for p in outcome.problems}
    for path in errors:
        by_file.setdefault(path, [])
    suite = ET.Element("testsuite", {
        "name": f"probegen {outcome.command}", "tests": str(len(by_file)),
        "failures": str(sum(1 for results in by_file.values() if results)), "errors": str(len(errors)),
        "skipped": "0",
    })
    for path, results in by_file.items():
        case = ET.SubElement(suite, "testcase", {"classname": f"probegen.{outcome.command}",
                                                 "name": printable(path)})
        if results:
            failure = ET.SubElement(case, "failure", {
                # printable(): control characters are not allowed in XML 1.0.
                "message": printable(results[0].message) if len(results) == 1 else f"{len(results)} findings",
                "type": ",".join(sorted({r.rule for r in results})),
            })
            failure.text = "\n".join(printable(f"{r.location}: {r.level}: {r.message}") for r in results)
        if path in errors:
            ET.SubElement(case, "error", {"message": printable(errors[path]), "type": "input"})
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
