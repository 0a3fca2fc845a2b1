"""Findings of ``verify``, ``lint`` and ``check`` in the formats CI reads.

Each command turns what it found into an ``Outcome``: results (Diagnostics
whose ``rule`` is one of probegen.reports.rules') and problems (inputs that
could not be read, exit 2), which ``render`` writes as text, SARIF 2.1.0,
GitHub workflow-command annotations, JSON or JUnit XML (verify keeps shapes
of its own for the last two: probegen.reports.plain).
"""

import os
from dataclasses import dataclass, field

from probegen.errors import Diagnostic, Location, printable


@dataclass
class Outcome:
    command: str  # verify, lint, check
    catalog: str
    summary: str
    results: list[Diagnostic] = field(default_factory=list)
    problems: list[Diagnostic] = field(default_factory=list)
    subjects: list[str] = field(default_factory=list)  # what was checked: one JUnit case each
    aborted: bool = False  # stopped before checking anything (the catalog could not be loaded)
    report: object = None  # verify's Report, for its own JSON and JUnit shapes

    @property
    def ok(self) -> bool:
        return not self.results and not self.problems


def relative_to_cwd(path: str) -> str | None:
    """``path`` relative to the working directory (the repository root in
    CI, where annotations and SARIF are resolved), or None outside it."""
    absolute, cwd = os.path.abspath(path), os.getcwd()
    return os.path.relpath(absolute, cwd) if absolute.startswith(cwd.rstrip("/") + "/") else None


def shown_path(path: str) -> str:
    """A path relative to the working directory when it is inside it, else as given."""
    return relative_to_cwd(path) or str(path)


def problem_of(path: str, exc) -> Diagnostic:
    """The problem an InputError about ``path`` is, at the error's Location
    when it has one."""
    return Diagnostic(exc.location or Location(str(path)), exc.message)


def render(outcome: Outcome, form: str) -> str:
    """The outcome in ``form``: one of the CI formats, or text (each result's
    line, then the summary)."""
    import json

    if form == "text":
        return "".join(f"{result}\n" for result in outcome.results) + printable(outcome.summary) + "\n"
    if form == "sarif":
        from probegen.reports.sarif import sarif_log

        return json.dumps(sarif_log(outcome), indent=1, ensure_ascii=False) + "\n"
    if form == "github":
        from probegen.reports.github import annotations

        return annotations(outcome)
    from probegen.reports import plain

    if outcome.report is not None:  # verify keeps shapes of its own
        if form == "json":
            return json.dumps(plain.verify_json(outcome.report, outcome.problems), indent=1) + "\n"
        return plain.verify_junit(outcome.report, outcome.problems)
    if form == "json":
        return json.dumps(plain.outcome_json(outcome), indent=1) + "\n"
    return plain.outcome_junit(outcome)


def emit(text: str, output: str | None) -> None:
    """The report on stdout, or in the file -o names (rewritten only when
    it changes, like every file probegen writes)."""
    import sys

    if output and output != "-":
        from pathlib import Path

        from probegen.files.output import GeneratedFile, write_if_changed

        write_if_changed(GeneratedFile(Path(output), text))
    else:
        sys.stdout.write(text)


def load_catalog_reported(args, command: str):
    """The catalog of ``args.catalog``. When it cannot be loaded and a CI
    format was asked for, the report still appears (a SARIF file the upload
    step expects, annotations at the catalog's errors) before the error
    propagates to its usual message on stderr and exit 2."""
    from probegen.catalog import load_catalog
    from probegen.errors import CatalogError, InputError

    try:
        return load_catalog(args.catalog)
    except InputError as exc:
        if args.format in ("sarif", "github"):
            outcome = Outcome(command, str(args.catalog), f"{command}: the catalog could not be loaded",
                              aborted=True)
            if isinstance(exc, CatalogError):
                outcome.results = [d._replace(rule="catalog-error") for d in exc.diagnostics]
            else:
                outcome.problems = [problem_of(args.catalog, exc)]
            emit(render(outcome, args.format), args.output)
        raise

