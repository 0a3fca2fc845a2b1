"""Check a composed catalog against the shipped JSON Schema, one message
per problem, at the YAML node the problem is about.

fastjsonschema compiles the schema into Python functions: a lean one
(~9 ms to compile) says whether the catalog is valid; only when it is not,
a detailed one (~30 ms) lists every error, each with the path of the value
it concerns, which leads back to the node and its position. jsonschema took
ten times as long on a 10,000-probe catalog and costs ~90 ms to import
(bench/bench_schema.py).
"""

from __future__ import annotations

import functools
import json
from difflib import get_close_matches
from typing import Any, Callable, Iterator

import fastjsonschema
import yaml

_STR = "tag:yaml.org,2002:str"
_EXPECTED = {"string": "a string", "boolean": "true or false", "integer": "an integer",
             "object": "a mapping", "array": "a list"}
# What one item of each list is called in messages.
_ITEM_NOUNS = {"probes": "probe", "args": "argument", "enums": "enum", "enumerators": "enumerator",
               "includes": "include", "members": "member"}
_MISMATCH = {"^[A-Za-z_][A-Za-z0-9_]*$": "is not a C identifier",
             "enumerators": "is not 'NAME' or 'NAME = VALUE' (VALUE a C integer constant)"}  # by pattern or list

Problem = tuple[yaml.Node, str]


def load_schema() -> dict:
    from probegen.data import schema

    return json.loads(schema().read_text("utf-8"))


@functools.lru_cache(maxsize=2)
def _validator(detailed: bool) -> Callable[[Any], Any]:
    return fastjsonschema.compile(load_schema(), use_default=False, detailed_exceptions=detailed,
                                  fast_fail=not detailed)


def structure_problems(root: yaml.Node, scalar: Callable[[yaml.Node], Any]) -> Iterator[Problem]:
    """Every way the document breaks the schema; ``scalar(node)`` gives a
    scalar node's value."""
    duplicates: list[Problem] = []
    data = _value(root, scalar, duplicates)
    yield from duplicates
    try:
        _validator(detailed=False)(data)
        return
    except fastjsonschema.JsonSchemaValueException:
        pass
    try:
        _validator(detailed=True)(data)
    except fastjsonschema.JsonSchemaValuesException as exc:
        for error in exc.errors:
            yield from _problems(root, error)


def _value(node: yaml.Node, scalar, duplicates: list[Problem], what: str = "catalog") -> Any:
    """The node as JSON data; keys repeated in a mapping go to duplicates
    (JSON data cannot hold them). ``what``: the node's key, or its noun."""
    kind = type(node)
    if kind is yaml.ScalarNode:
        return node.value if node.tag == _STR else scalar(node)
    if kind is yaml.MappingNode:
        value = {key.value: _value(item, scalar, duplicates, key.value) for key, item in node.value}
        if len(value) < len(node.value):
            seen: set[str] = set()
            for key, _ in node.value:
                if key.value in seen:
                    named = what if what == "catalog" or what in _ITEM_NOUNS.values() else f"'{what}'"
                    duplicates.append((key, f"{named}: duplicate key '{key.value}'"))
                seen.add(key.value)
        return value
    noun = _ITEM_NOUNS.get(what, what)
    return [_value(item, scalar, duplicates, noun) for item in node.value]


def _locate(root: yaml.Node, path: list[str]) -> tuple[yaml.Node, str, str]:
    """(node, what it is called, its mapping key or '') at a fastjsonschema
    error path (['data', 'probes', '0', 'name'])."""
    node, what, key = root, "catalog", ""
    for step in path[1:]:
        if isinstance(node, yaml.SequenceNode):
            node, what = node.value[int(step)], _ITEM_NOUNS.get(key, what)
        else:  # the last of repeated keys, as the JSON data holds
            node = next(value for name, value in reversed(node.value) if name.value == step)
            what, key = f"'{step}'", step
    return node, what, key


def _problems(root: yaml.Node, error) -> Iterator[Problem]:
    node, what, key = _locate(root, error.path)
    rule, limit, value = error.rule, error.rule_definition, error.value
    if rule == "type":
        if limit in ("object", "array"):
            yield node, f"{what}: expected {_EXPECTED[limit]}"
        else:
            found = (f"'{node.value}'" if isinstance(node, yaml.ScalarNode)
                     else "a mapping" if isinstance(node, yaml.MappingNode) else "a list")
            yield node, f"{what}: expected {_EXPECTED.get(limit, 'a ' + str(limit))}, found {found}"
    elif rule == "required":
        for name in limit:
            if name not in value:
                yield node, f"{what}: missing required key '{name}'"
    elif rule == "additionalProperties":
        known = list(error.definition.get("properties", {}))
        for key_node, _ in node.value:
            if key_node.value not in known:
                close = get_close_matches(key_node.value, known, n=1)
                hint = f"; did you mean '{close[0]}'?" if close else f"; expected one of: {', '.join(known)}"
                yield key_node, f"{what}: unknown key '{key_node.value}'{hint}"
    elif rule == "minItems":
        yield node, f"{what}: expected at least {limit} item(s), found {len(value) or 'none'}"
    elif rule == "maxItems":
        yield node, f"{what}: has {len(value)} {_ITEM_NOUNS.get(key, 'item')}s; at most {limit} are allowed"
    elif rule == "pattern":
        mismatch = _MISMATCH.get(limit) or _MISMATCH.get(key, f"is not of the form {limit}")
        yield node, f"{what}: '{_printable(value)}' {mismatch}"
    elif rule in ("minimum", "maximum"):
        low, high = error.definition.get("minimum", ""), error.definition.get("maximum", "")
        yield node, f"{what}: {value} is out of range {low}..{high}"
    elif rule == "enum":
        yield node, f"{what}: '{_printable(str(value))}' is not one of: {', '.join(map(str, limit))}"
    else:  # a keyword the schema took up later: fastjsonschema's own words
        yield node, f"{what}: {error.message[len(error.name) + 1:]}"


def _printable(text: str) -> str:
    """Text for a one-line message: control characters escaped (\\n)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
