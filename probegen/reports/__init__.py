"""Findings of ``verify``, ``lint`` and ``check`` as an ``Outcome``: results (Diagnostics, their ``rule``
one of probegen.reports.rules') and problems (unreadable inputs), rendered as text, SARIF 2.1.0, GitHub
annotations, JSON or JUnit XML.
"""

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from probegen.errors import CatalogError, Diagnostic, InputError, Location, printable


@dataclass
class Outcome:
    command: str  # verify, lint, check
    catalog: str
    summary: str
    results: list[Diagnostic] = field(default_factory=list)
    problems: list[Diagnostic] = field(default_factory=list)
    subjects: list[str] = field(default_factory=list)  # what was checked: one JUnit case each
    report: object = None  # verify's Report, for its own JSON and JUnit shapes


def relative_to_cwd(path: str) -> str | None:
    """``path`` relative to the working directory (in CI the repository root, which annotations
    and SARIF are resolved against), or None outside it."""
    absolute, cwd = os.path.abspath(path), os.getcwd()
    return os.path.relpath(absolute, cwd) if absolute.startswith(cwd.rstrip("/") + "/") else None


def shown_path(path: str) -> str:
    return relative_to_cwd(path) or str(path)


def problem_of(path: str, exc) -> Diagnostic:
    """An InputError about ``path`` as a problem, at its Location if it has one."""
    return Diagnostic(exc.location or Location(str(path)), exc.message)


def render(outcome: Outcome, form: str) -> str:
    """The outcome as text (each result's line, then the summary) or in a CI format."""
    import json

    if form == "text":
        return "".join(f"{result}\n" for result in outcome.results) + printable(outcome.summary) + "\n"
    from probegen.reports import github, plain, sarif

    if form == "sarif":
        text = json.dumps(sarif.sarif_log(outcome), indent=1, ensure_ascii=False)
        # a lone surrogate (a file name's byte that is not UTF-8) as the \uXXXX escape the json form writes
        return text.encode("utf-8", "backslashreplace").decode() + "\n"
    if form == "github":
        return github.annotations(outcome)
    report, problems = outcome.report, outcome.problems  # verify keeps shapes of its own
    if form == "json":
        data = plain.outcome_json(outcome) if report is None else plain.verify_json(report, problems)
        return json.dumps(data, indent=1) + "\n"
    return plain.outcome_junit(outcome) if report is None else plain.verify_junit(report, problems)


def emit(text: str, output: str | None) -> None:
    """The report on stdout, or in the file -o names (written if changed)."""
    if output and output != "-":
        from probegen.files.output import GeneratedFile, write_if_changed

        write_if_changed(GeneratedFile(Path(output), text))
    else:
        sys.stdout.write(text)


def load_catalog_reported(args):
    """The catalog of ``args.catalog``; if it cannot be loaded, a SARIF or GitHub
    report still appears (the upload step expects it) before the error propagates."""
    from probegen.catalog import load_catalog

    try:
        return load_catalog(args.catalog)
    except InputError as exc:
        if args.format in ("sarif", "github"):
            outcome = Outcome(args.command, str(args.catalog), f"{args.command}: the catalog could not be loaded")
            if isinstance(exc, CatalogError):
                outcome.results = [d._replace(rule="catalog-error") for d in exc.diagnostics]
            else:
                outcome.problems = [problem_of(args.catalog, exc)]
            emit(render(outcome, args.format), args.output)
        raise
