"""A composed catalog as JSON data, checked against the shipped JSON Schema:
one message per problem, at the YAML node it is about. A lean validator
(~4 ms to compile) says whether the catalog is valid; only when it is not,
a detailed one (~10 ms) lists every error with its path to the node.
"""

import functools
import json
from difflib import get_close_matches
from typing import Any, Callable, Iterator

import fastjsonschema
import yaml

from probegen.catalog.cvalidate import text_problem
from probegen.data import SCHEMA

STR = "tag:yaml.org,2002:str"
_EXPECTED = {"string": "a string", "boolean": "true or false", "integer": "an integer",
             "object": "a mapping", "array": "a list"}
# What one item of each list is called in messages.
_ITEM_NOUNS = {"probes": "probe", "args": "argument", "enums": "enum", "enumerators": "enumerator",
               "includes": "include", "members": "member"}
_MISMATCH = {"^[A-Za-z_][A-Za-z0-9_]*$": "is not a C identifier",
             "enumerators": "is not 'NAME' or 'NAME = VALUE' (VALUE a C integer constant)"}  # by pattern or list

Problem = tuple[yaml.Node, str]

# A catalog nests 6 deep (catalog, probes, probe, args, argument, members).
MAX_DEPTH = 64
# Tags a catalog's nodes may carry, explicit (!!str 0x10) or resolved; any
# other, such as !!python/name:..., has no meaning in a catalog.
ALLOWED_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("str", "int", "bool", "null", "float", "timestamp",
                                                             "seq", "map"))


def load_schema() -> dict:
    return json.loads(SCHEMA.read_text("utf-8"))


@functools.lru_cache(maxsize=2)
def _validator(detailed: bool) -> Callable[[Any], Any]:
    return fastjsonschema.compile(load_schema(), use_default=False, detailed_exceptions=detailed,
                                  fast_fail=not detailed)


class Refused(Exception):
    """(node, message): YAML that a catalog may not use; nothing else is checked."""


def plain(root: yaml.Node, marked: bool = True) -> tuple[Any, list[Problem]]:
    """(the document as JSON data, [(node, message)] for its repeated keys
    and strings holding a character they may not). Raises Refused for
    aliases (their walks grow exponentially: "billion laughs"), tags beyond
    YAML's core, keys that are not scalars, nesting past MAX_DEPTH.
    ``marked``: the text holds '&' or '!' (else there is no alias or tag,
    and no set of every node is kept)."""
    problems: list[Problem] = []
    seen: set[int] = set()  # every node: an alias is a node met twice
    constructor = yaml.SafeLoader("")  # for scalars other than strings
    Scalar = yaml.ScalarNode  # noqa: N806

    def check(node: yaml.Node, holder: yaml.Node) -> None:
        """``holder``: the key or list shown for an alias (which has no
        position of its own)."""
        if id(node) in seen:
            raise Refused(holder, "YAML aliases are not allowed in a catalog; write the value out")
        seen.add(id(node))
        if node.tag not in ALLOWED_TAGS:
            raise Refused(node, f"YAML tag {node.tag} is not allowed in a catalog")

    def text(node: yaml.Node, doc: bool) -> Any:
        node.end_mark = None  # never read: freed as the data grows (~10% of a big catalog's peak memory)
        if not node.value.isprintable() and (problem := text_problem(node.value, doc)):
            problems.append((node, problem))
        return node.value if node.tag == STR else constructor.construct_object(node)

    def collection(node: yaml.Node, what: str, depth: int) -> Any:  # what: its key, or its noun
        if depth >= MAX_DEPTH:
            raise Refused(node, f"nested more than {MAX_DEPTH} levels deep (a catalog needs 6)")
        node.end_mark = None
        depth += 1
        if type(node) is yaml.SequenceNode:
            noun = _ITEM_NOUNS.get(what, what)
            items = []
            for item in node.value:
                if marked:
                    check(item, node)
                items.append(text(item, False) if type(item) is Scalar else collection(item, noun, depth))
            return items
        data = {}
        for key, item in node.value:
            if type(key) is not Scalar:
                raise Refused(key, "a mapping key must be a plain name, not a list or mapping")
            if marked:
                check(key, key)
                check(item, key)
            name = key.value
            if not name.isprintable() and (problem := text_problem(name, False)):
                problems.append((key, problem))
            data[name] = text(item, name == "doc") if type(item) is Scalar else collection(item, name, depth)
        if len(data) < len(node.value):
            keys: set[str] = set()
            for key, _ in node.value:
                if key.value in keys:
                    named = what if what == "catalog" or what in _ITEM_NOUNS.values() else f"'{what}'"
                    problems.append((key, f"{named}: duplicate key '{key.value}'"))
                keys.add(key.value)
        return data

    check(root, root)
    return (text(root, False) if type(root) is Scalar else collection(root, "catalog", 0)), problems


def structure_problems(root: yaml.Node, data: Any) -> Iterator[Problem]:
    """Every way the document (``data``, from plain) breaks the schema."""
    try:
        _validator(detailed=False)(data)
    except fastjsonschema.JsonSchemaValueException:
        try:
            _validator(detailed=True)(data)
        except fastjsonschema.JsonSchemaValuesException as exc:
            for error in exc.errors:
                yield from _problems(root, error)


def _problems(root: yaml.Node, error) -> Iterator[Problem]:
    # The node at the error's path (['data', 'probes', '0', 'name']), what
    # it is called, and its mapping key ('' in a list).
    node, what, key = root, "catalog", ""
    for step in error.path[1:]:
        if isinstance(node, yaml.SequenceNode):
            node, what = node.value[int(step)], _ITEM_NOUNS.get(key, what)
        else:  # the last of repeated keys, as the JSON data holds
            node = next(value for name, value in reversed(node.value) if name.value == step)
            what, key = f"'{step}'", step
    rule, limit, value = error.rule, error.rule_definition, error.value
    if rule == "type":
        if limit in ("object", "array"):
            yield node, f"{what}: expected {_EXPECTED[limit]}"
        else:
            found = (f"'{node.value}'" if isinstance(node, yaml.ScalarNode)
                     else "a mapping" if isinstance(node, yaml.MappingNode) else "a list")
            yield node, f"{what}: expected {_EXPECTED[limit]}, found {found}"
    elif rule == "required":
        for name in limit:
            if name not in value:
                yield node, f"{what}: missing required key '{name}'"
    elif rule == "additionalProperties":
        known = list(error.definition["properties"])
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
        yield node, f"{what}: {value} is out of range {error.definition['minimum']}..{error.definition['maximum']}"
    elif rule == "enum":
        yield node, f"{what}: '{_printable(str(value))}' is not one of: {', '.join(map(str, limit))}"
    else:  # a keyword the schema took up later: fastjsonschema's own words
        yield node, f"{what}: {error.message[len(error.name) + 1:]}"


def _printable(text: str) -> str:  # for a one-line message: a newline as \n
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
