"""Check composed YAML nodes against the catalog's JSON Schema, one message
per problem, at the node's position.

Only the parts of JSON Schema the catalog's schema uses are understood:
type, properties, required, additionalProperties, items, minItems,
pattern, minimum and maximum. Each schema fragment is compiled once into a
checking function, since a 2,000-probe catalog checks ~20,000 nodes
against a dozen fragments.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import yaml

_TAGS = {
    "string": "tag:yaml.org,2002:str",
    "integer": "tag:yaml.org,2002:int",
    "boolean": "tag:yaml.org,2002:bool",
    "number": "tag:yaml.org,2002:float",
    "null": "tag:yaml.org,2002:null",
}
_EXPECTED = {"string": "a string", "boolean": "true or false", "integer": "an integer"}
# What one item of each list is called in messages.
_ITEM_NOUNS = {"probes": "probe", "args": "argument", "enums": "enum", "enumerators": "enumerator",
               "includes": "include", "members": "member"}

_IDENTIFIER_PATTERN = "^[A-Za-z_][A-Za-z0-9_]*$"

Check = Callable[[yaml.Node, str], bool]  # (node, what it is) -> usable


class SchemaWalker:
    """``error(node, message)`` receives each problem; ``scalar(node)``
    gives a scalar node's value (for patterns and bounds)."""

    def __init__(self, error: Callable[[yaml.Node, str], None], scalar: Callable[[yaml.Node], Any]):
        self._error = error
        self._scalar = scalar
        self._compiled: dict[int, tuple[dict, Check]] = {}

    def check(self, node: yaml.Node, schema: dict, what: str) -> bool:
        """Check node against a schema fragment; False if it is unusable."""
        return self._checker(schema)(node, what)

    def _checker(self, schema: dict) -> Check:
        entry = self._compiled.get(id(schema))
        if entry is None or entry[0] is not schema:
            kind = schema.get("type")
            if kind == "object":
                check = self._mapping(schema)
            elif kind == "array":
                check = self._sequence(schema)
            elif kind is None:
                check = _anything
            else:
                check = self._scalar_of(schema, kind)
            entry = self._compiled[id(schema)] = (schema, check)
        return entry[1]

    def _mapping(self, schema: dict) -> Check:
        error = self._error
        known = {key: (self._checker(sub), f"'{key}'") for key, sub in schema.get("properties", {}).items()}
        extra = schema.get("additionalProperties", True)
        check_extra = self._checker(extra) if isinstance(extra, dict) else None
        required = tuple(schema.get("required", ()))

        def check(node: yaml.Node, what: str) -> bool:
            if not isinstance(node, yaml.MappingNode):
                error(node, f"{what}: expected a mapping")
                return False
            seen: set[str] = set()
            ok = True
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if key is None:
                    error(key_node, f"{what}: keys must be plain names")
                    ok = False
                    continue
                if key in seen:
                    error(key_node, f"{what}: duplicate key '{key}'")
                    ok = False
                    continue
                seen.add(key)
                found = known.get(key)
                if found is not None:
                    ok &= found[0](value_node, found[1])
                elif extra is False:
                    from difflib import get_close_matches  # only on this error

                    close = get_close_matches(key, known, n=1)
                    hint = f"; did you mean '{close[0]}'?" if close else f"; expected one of: {', '.join(known)}"
                    error(key_node, f"{what}: unknown key '{key}'{hint}")
                    ok = False
                elif check_extra is not None:
                    ok &= check_extra(value_node, f"'{key}'")
            for key in required:
                if key not in seen:
                    error(node, f"{what}: missing required key '{key}'")
                    ok = False
            return ok

        return check

    def _sequence(self, schema: dict) -> Check:
        error = self._error
        check_item = self._checker(schema.get("items", {}))
        min_items = schema.get("minItems", 0)

        def check(node: yaml.Node, what: str) -> bool:
            if not isinstance(node, yaml.SequenceNode):
                error(node, f"{what}: expected a list")
                return False
            ok = True
            if len(node.value) < min_items:
                error(node, f"{what}: expected at least {min_items} item(s), found none")
                ok = False
            noun = _ITEM_NOUNS.get(what.strip("'"), what)
            for item in node.value:
                ok &= check_item(item, noun)
            return ok

        return check

    def _scalar_of(self, schema: dict, kind: str) -> Check:
        error, scalar = self._error, self._scalar
        tag = _TAGS[kind]
        expected = _EXPECTED.get(kind, f"a {kind}")
        pattern = _compile_pattern(schema["pattern"]) if "pattern" in schema else None
        mismatch = ("is not a C identifier" if schema.get("pattern") == _IDENTIFIER_PATTERN
                    else "is not 'NAME' or 'NAME = VALUE' (VALUE a C integer constant)"
                    if pattern is not None and "A-Za-z_" in pattern.pattern
                    else f"is not of the form {schema.get('pattern')}")
        minimum, maximum = schema.get("minimum"), schema.get("maximum")
        plain = pattern is None and minimum is None and maximum is None

        def check(node: yaml.Node, what: str) -> bool:
            if not isinstance(node, yaml.ScalarNode) or node.tag != tag:
                found = f"'{node.value}'" if isinstance(node, yaml.ScalarNode) else (
                    "a mapping" if isinstance(node, yaml.MappingNode) else "a list")
                error(node, f"{what}: expected {expected}, found {found}")
                return False
            if plain:
                return True
            value = scalar(node)
            if pattern is not None and not pattern.search(value):
                error(node, f"{what}: '{_printable(value)}' {mismatch}")
                return False
            if minimum is not None and value < minimum or maximum is not None and value > maximum:
                error(node, f"{what}: {value} is out of range {minimum}..{maximum}")
                return False
            return True

        return check


def _anything(node: yaml.Node, what: str) -> bool:
    return True


def _printable(text: str) -> str:
    """Text for a one-line message: control characters escaped (\\n)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def _compile_pattern(pattern: str) -> re.Pattern:
    r"""A JSON Schema pattern (ECMAScript) as a Python regex for search().

    ECMAScript's ``$`` matches only at the very end of the text; Python's
    also before a final newline, which would let "name\n" pass as a C
    identifier. A closing ``$`` becomes ``\Z``."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)
