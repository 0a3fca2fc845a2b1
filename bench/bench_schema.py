#!/usr/bin/env python3
"""Checking a 10,000-probe catalog against the JSON Schema: fastjsonschema
(what the loader uses) against jsonschema, each as a share of the whole
load (run by hand: .venv/bin/python bench/bench_schema.py).

Both libraries check the same JSON data, made from the composed YAML
nodes; the import and the one-off compile count for every probegen run,
so they are measured in fresh processes. CPU time (less swayed by a busy
machine than wall-clock), best of 5.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_header import synthetic  # noqa: E402
from timing import PYTHON, REPO, Command, race  # noqa: E402

sys.path.insert(0, str(REPO))
from probegen.catalog import load, load_catalog, schema_check  # noqa: E402

PROBES = 10_000
ROUNDS = 5


def best(action) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.process_time()
        action()
        times.append(time.process_time() - start)
    return min(times) * 1000


def fresh_process_ms(codes: list[str]) -> list[float]:
    """CPU time of `python -c code` for each code, less that of `python -c pass`."""
    commands = [Command(code, [PYTHON, "-c", code]) for code in ["pass", *codes]]
    race(commands, rounds=ROUNDS)
    return [command.best_cpu_ms - commands[0].best_cpu_ms for command in commands[1:]]


def main() -> None:
    import jsonschema

    with tempfile.TemporaryDirectory() as tmp:
        catalog, _ = synthetic(Path(tmp), PROBES)
        whole = best(lambda: load_catalog(catalog))
        root, _ = load._compose(catalog.read_text())
    builder = load._Builder("bench", catalog, load.load_schema())
    data = schema_check._value(root, builder.scalar, [])
    schema = load.load_schema()
    compiled = schema_check._validator(detailed=False)
    validator = jsonschema.Draft202012Validator(schema)
    rows = [
        ("nodes -> JSON data", best(lambda: schema_check._value(root, builder.scalar, []))),
        ("fastjsonschema check", best(lambda: compiled(data))),
        ("jsonschema check", best(lambda: list(validator.iter_errors(data)))),
    ]
    print(f"{PROBES:,}-probe catalog, whole load_catalog: {whole:7.1f} ms (the reference)")
    for label, ms in rows:
        print(f"   {label:24} {ms:7.1f} ms  {ms / whole:5.2f} of the load")
    print("per run, fresh processes (less `python -c pass`):")
    yaml_only, fast, slow, module, compiled = fresh_process_ms([
        "import yaml", "import yaml, fastjsonschema", "import yaml, jsonschema",
        "from probegen.catalog import schema_check",
        "from probegen.catalog import schema_check; schema_check._validator(detailed=False)"])
    for label, ms in [("import fastjsonschema", fast - yaml_only), ("compile the lean check", compiled - module),
                      ("import jsonschema", slow - yaml_only)]:
        print(f"   {label:24} {ms:7.1f} ms")

if __name__ == "__main__":
    main()
