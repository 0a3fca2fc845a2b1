"""An Outcome as GitHub Actions workflow commands: one ``::error`` annotation
per finding, its text escaped as the runner unescapes it (doc/security.md).
"""

from probegen.errors import Location, escape_controls, printable
from probegen.reports import Outcome, shown_path


def escape_data(text: str) -> str:
    return escape_controls(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(location: Location, title: str, message: str) -> str:
    properties = [f"file={escape_property(shown_path(location.path))}"]
    if location.line > 0:
        properties.append(f"line={location.line}")
        if location.column > 0:
            properties.append(f"col={location.column}")
    properties.append(f"title={escape_property(title)}")
    return f"::error {','.join(properties)}::{escape_data(message)}"


def annotations(outcome: Outcome) -> str:
    title = f"probegen {outcome.command}"
    lines = [annotation(r.location, f"{title}: {r.rule}", r.message) for r in outcome.results]
    lines += [annotation(p.location, f"{title}: input error", p.message) for p in outcome.problems]
    lines.append(printable(outcome.summary))
    return "\n".join(lines) + "\n"
