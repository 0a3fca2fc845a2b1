"""An Outcome as a SARIF 2.1.0 log. Paths inside the working directory (the checkout, in CI) are relative
to %SRCROOT%, which code scanning resolves to the repository root; unreadable inputs are notifications.
"""

import os
from pathlib import Path
from urllib.parse import quote

from probegen import __version__
from probegen.errors import Location
from probegen.reports import Outcome, relative_to_cwd
from probegen.reports.rules import RULES

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SOURCE_ROOT = "%SRCROOT%"


def physical_location(location: Location) -> dict:
    relative = relative_to_cwd(location.path)
    if relative is None:
        place: dict = {"artifactLocation": {"uri": Path(os.path.abspath(location.path)).as_uri()}}
    else:  # quote() also escapes ':' so that no first segment reads as a scheme; a byte not UTF-8 as %XX
        place = {"artifactLocation": {"uri": quote(os.fsencode(relative), safe="/"), "uriBaseId": SOURCE_ROOT}}
    if location.line > 0:
        place["region"] = {"startLine": location.line}
        if location.column > 0:
            place["region"]["startColumn"] = location.column
    return {"physicalLocation": place}


def sarif_log(outcome: Outcome) -> dict:
    rules = RULES[outcome.command]
    results = [{"ruleId": result.rule, "level": "error", "message": {"text": result.message},
                "locations": [physical_location(result.location)], "ruleIndex": list(rules).index(result.rule)}
               for result in outcome.results]
    notifications = [
        {"level": "error", "message": {"text": problem.message}, "locations": [physical_location(problem.location)]}
        for problem in outcome.problems
    ]
    base = Path(os.getcwd()).as_uri()  # a base URI names a directory by its final slash
    stopped = any(result.rule == "catalog-error" for result in outcome.results)  # before it checked anything
    invocation = {"executionSuccessful": not outcome.problems and not stopped}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    run = {
        "tool": {"driver": {
            "name": "probegen",
            "version": __version__,
            "semanticVersion": __version__,
            "rules": [
                {"id": rule, "shortDescription": {"text": text}, "defaultConfiguration": {"level": "error"}}
                for rule, text in rules.items()
            ],
        }},
        # One category per command: code scanning keeps verify's, lint's and check's results apart.
        "automationDetails": {"id": f"probegen/{outcome.command}/"},
        "originalUriBaseIds": {SOURCE_ROOT: {"uri": base if base.endswith("/") else base + "/"}},
        "columnKind": "unicodeCodePoints",
        "invocations": [invocation],
        "results": results,
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
