"""The loader enforces every keyword the shipped JSON Schema uses.

The schema is walked for the keywords it uses; each one that constrains a
catalog has a catalog breaking it here, refused at the position of the
value it is about. A keyword added to the schema without a case fails
the first test, so the schema cannot say more than the loader checks.
"""

from __future__ import annotations

import pytest

from probegen.catalog import load_catalog
from probegen.catalog.schema_check import load_schema
from probegen.errors import CatalogError

# Keywords that describe and constrain nothing (JSON Schema's annotations
# and identifiers, and probegen's x-directory: the outputs that are directories).
ANNOTATIONS = {"$schema", "$id", "title", "description", "default", "x-directory"}

GOOD = """\
provider: demo
probes:
  - name: hello
    group: app
    doc: Says hello.
    args:
      - {name: n, type: int}
"""
ARG = "      - {name: n, type: int}"

# keyword -> [(catalog breaking it, the message with its line:column)]
VIOLATIONS = {
    "type": [
        (GOOD.replace("provider: demo", "provider: 3"), "1:11: 'provider': expected a string, found '3'"),
        (GOOD.replace("args:\n" + ARG, "args: {n: int}"), "6:11: 'args': expected a list"),
        ("[provider, demo]\n", "1:1: catalog: expected a mapping"),
        (GOOD + "enums:\n  - {name: e, enumerators: AB}\n", "9:28: 'enumerators': expected a list"),
    ],
    "properties": [
        (GOOD + "arg0: maybe\n", "8:7: 'arg0': expected true or false, found 'maybe'"),
        (GOOD.replace("    doc: Says hello.\n", "    doc: Says hello.\n    enabled_check: often\n"),
         "6:20: 'enabled_check': expected true or false, found 'often'"),
    ],
    "required": [
        (GOOD.replace("    group: app\n", ""), "3:5: probe: missing required key 'group'"),
    ],
    "additionalProperties": [
        (GOOD.replace("group: app", "gruop: app"), "4:5: probe: unknown key 'gruop'; did you mean 'group'?"),
        (GOOD + "typedefs:\n  t: [int]\n", "9:6: 't': expected a string, found a list"),
    ],
    "items": [
        (GOOD.replace(ARG, "      - n"), "7:9: argument: expected a mapping"),
        (GOOD + "header:\n  includes: [{a: b}]\n", "9:14: include: expected a string, found a mapping"),
    ],
    "minItems": [
        ("provider: demo\nprobes: []\n", "2:9: 'probes': expected at least 1 item(s), found none"),
    ],
    "maxItems": [
        (GOOD.replace(ARG, "\n".join(f"      - {{name: a{i}, type: int}}" for i in range(13))),
         "7:7: 'args': has 13 arguments; at most 12 are allowed"),
    ],
    "pattern": [
        (GOOD.replace("name: hello", "name: 2hello"), "3:11: 'name': '2hello' is not a C identifier"),
        (GOOD + "enums:\n  - {name: e, enumerators: [A = 1.5]}\n",
         "9:29: enumerator: 'A = 1.5' is not 'NAME' or 'NAME = VALUE' (VALUE a C integer constant)"),
    ],
    "minimum": [
        (GOOD.replace(ARG, "      - {name: s, type: char *, max_len: 0}"), "7:42: 'max_len': 0 is out of range 1..4096"),
    ],
    "maximum": [
        (GOOD.replace(ARG, "      - {name: s, type: char *, max_len: 4097}"),
         "7:42: 'max_len': 4097 is out of range 1..4096"),
    ],
    "enum": [
        (GOOD + "header: {style: dtrace3}\n", "8:17: 'style': 'dtrace3' is not one of: probegen, dtrace"),
    ],
}


def keywords(schema: dict) -> set[str]:
    """Every keyword used anywhere in the schema."""
    found = set(schema)
    for keyword, value in schema.items():
        if keyword == "properties":
            for sub in value.values():
                found |= keywords(sub)
        elif isinstance(value, dict):  # items, additionalProperties
            found |= keywords(value)
    return found


def test_every_keyword_the_schema_uses_has_a_violating_catalog():
    used = keywords(load_schema())
    assert "maxItems" in used
    assert used - ANNOTATIONS == set(VIOLATIONS), "a schema keyword without a case here, or a case for none"


@pytest.mark.parametrize("keyword, text, expected", [
    (keyword, text, expected) for keyword, cases in VIOLATIONS.items() for text, expected in cases
])
def test_keyword_is_enforced_at_the_value_it_is_about(tmp_path, keyword, text, expected):
    path = tmp_path / "probes.yaml"
    path.write_text(text)
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    messages = [str(d) for d in info.value.diagnostics]
    line_column, message = expected.split(" ", 1)
    assert f"{path}:{line_column} error: {message}" in messages, messages


def test_the_good_catalog_breaks_none(tmp_path):
    path = tmp_path / "probes.yaml"
    path.write_text(GOOD)
    assert [p.name for p in load_catalog(path).probes] == ["hello"]
