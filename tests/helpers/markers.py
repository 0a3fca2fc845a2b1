"""The suite's parts, inferred from what each test calls.

A test is marked ``tracer`` when it, or a fixture or function it reaches in
its module, conftest.py or tests/helpers, names a root-only tracer
(require_bpftrace, require_bcc, require_root, the string "bpftrace"), and
``compile`` when it reaches a compiler or a build tool. Inferring the marks
means no test can forget them: a new test that starts bpftrace through any
helper is in the tracer part. ``slow`` is set by hand on the few tests that
take seconds without a tracer.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent

SEEDS = {
    "tracer": {"require_bpftrace", "require_bcc", "require_root"},
    "compile": {"compile_c", "compile_for", "try_compile", "run_compiler", "gcc", "g++", "cc", "meson", "cmake",
                "make", "ninja", "build_program", "build_spdk_program", "build_pgtest", "build_drift"},
}


@cache
def _uses(path: Path) -> dict[str, set[str]]:
    """Each function of the file (methods too), by name: the names, attributes
    and short strings it mentions."""
    uses: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            words = uses.setdefault(node.name, set())
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name):
                    words.add(inner.id)
                elif isinstance(inner, ast.Attribute):
                    words.add(inner.attr)
                elif isinstance(inner, ast.Constant) and isinstance(inner.value, str) and len(inner.value) < 20:
                    words.add(inner.value)
    return uses


@cache
def _reaching(module: Path) -> dict[str, frozenset[str]]:
    """For each function visible to ``module``'s tests: the marks it reaches."""
    uses: dict[str, set[str]] = {}
    for path in [*sorted((TESTS / "helpers").glob("*.py")), TESTS / "conftest.py", module]:
        for name, words in _uses(path).items():
            uses.setdefault(name, set()).update(words)
    marks = {name: {mark for mark, seeds in SEEDS.items() if words & seeds} for name, words in uses.items()}
    changed = True
    while changed:  # to a fixed point: a function reaches what its callees reach
        changed = False
        for name, words in uses.items():
            for word in words & uses.keys():
                if not marks[word] <= marks[name]:
                    marks[name] |= marks[word]
                    changed = True
    return {name: frozenset(found) for name, found in marks.items()}


def inferred_marks(module: Path, function: str, fixtures: list[str]) -> set[str]:
    reaching = _reaching(module)
    return {mark for name in (function, *fixtures) for mark in reaching.get(name, ())}
