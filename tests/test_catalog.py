"""Loading catalogs: the model, and one clear message per problem.

Every bad catalog is also run through the real command line to check the
exit code (2) and that no traceback escapes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from probegen.catalog import load_catalog
from probegen.catalog.model import enum_names
from probegen.catalog.schema_check import load_schema
from probegen.catalog.ctype import CTypeError, Kind, parse_ctype
from probegen.errors import CatalogError, InputError

from helpers import lines_run

REPO = Path(__file__).parent.parent

GOOD = """\
provider: demo
probes:
  - name: hello
    group: app
    doc: Says hello.
    args:
      - {name: who, type: const char *}
      - {name: n, type: int}
"""


def write(tmp_path: Path, text: str | bytes, name="probes.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def errors_of(path: Path) -> list[str]:
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    return [str(d) for d in info.value.diagnostics]


def run_cli(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "probegen", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


def test_default_catalog_models_spdk():
    catalog = load_catalog(REPO / "probes.yaml")
    assert catalog.provider == "spdk" and catalog.arg0
    assert len(catalog.probes) == 50
    assert set(catalog.groups) == {"event", "thread", "nvmf", "scheduler", "bdev_nvme"}
    change = catalog.probe("nvmf_subsystem_change_state")
    assert [a.ctype.spelling for a in change.args] == [
        "const char *", "enum spdk_nvmf_subsystem_state", "enum spdk_nvmf_subsystem_state"]
    assert change.args[0].index == 1 and change.note_args[0].passed == "0"  # SPDK's arg0 comes first
    assert catalog.probe("nvmf_ctrlr_create").ticks and not change.ticks
    event = catalog.probe("event_exec")
    assert event.args[0].ctype.kind is Kind.FUNCTION_POINTER and event.args[0].ctype.name == "spdk_event_fn"
    states = catalog.enum("spdk_nvmf_subsystem_state")
    assert [e.value for e in states.enumerators] == list(range(8))
    assert enum_names(states.enumerators, states.strip_prefix)[4] == "PAUSED"
    transport = catalog.enum("spdk_nvme_transport_type")
    assert {e.name: e.value for e in transport.enumerators}["SPDK_NVME_TRANSPORT_PCIE"] == 256


def test_default_catalog_passes_the_shipped_json_schema():
    """Editors validate with the same schema file the loader walks."""
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(yaml.safe_load((REPO / "probes.yaml").read_text()), schema)


def test_catalog_points_editors_at_the_schema():
    first = (REPO / "probes.yaml").read_text().splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    assert (REPO / first.split("=", 1)[1]).is_file()


@pytest.mark.parametrize("text, expected", [
    ("provider: demo\nprobes:\n  - name: a\n    group: g\n    doc: [unclosed\n",
     ["probes.yaml:6:1: error: YAML syntax:"]),
    (GOOD.replace("    group: app", "    gruop: app"),
     ["probes.yaml:4:5: error: probe: unknown key 'gruop'; did you mean 'group'?",
      "probes.yaml:3:5: error: probe: missing required key 'group'"]),
    (GOOD.replace("provider: demo\n", ""), ["probes.yaml:1:1: error: catalog: missing required key 'provider'"]),
    (GOOD.replace("      - {name: n, type: int}", "      - {name: n}"),
     ["probes.yaml:8:9: error: argument: missing required key 'type'"]),
    (GOOD + "  - name: hello\n    group: app\n    doc: Again.\n",
     ["probes.yaml:9:11: error: duplicate probe name 'hello' (first defined at probes.yaml:3:11)"]),
    (GOOD.replace("name: hello", "name: 2hello"), ["probes.yaml:3:11: error: 'name': '2hello' is not a C identifier"]),
    (GOOD.replace("name: hello", "name: static_assert"),
     ["probes.yaml:3:11: error: probe: 'static_assert' is a macro in C (<assert.h> defines it)"]),
    (GOOD.replace("{name: n, type: int}", "{name: int, type: int}"), ["probes.yaml:8:16: error: argument: 'int' is a C keyword and cannot name an argument"]),
    (GOOD.replace("type: int}", "type: foo_t}"), ["probes.yaml:8:25: error: argument 'n': unknown type 'foo_t': declare it under 'typedefs:'"]),
    (GOOD.replace("type: int}", "type: double}"), ["argument 'n': floating-point type 'double' is not supported"]),
    (GOOD.replace("type: int}", "type: struct foo}"), ["'struct foo' passed by value is not supported"]),
    (GOOD.replace("type: int}", "type: 'char[16]'}"), ["array type 'char[16]'"]),
    (GOOD.replace("type: int}", "type: enum color}"), ["probes.yaml:8:9: error: argument 'n' of 'hello' is 'enum color', which is not declared under 'enums:'"]),
    ("", ["probes.yaml:1:1: error: empty catalog"]),
    ("# only a comment\n", ["probes.yaml:1:1: error: empty catalog"]),
    ("provider: demo\nprobes: []\n", ["probes.yaml:2:9: error: 'probes': expected at least 1 item(s), found none"]),
    ("- a\n- b\n", ["probes.yaml:1:1: error: catalog: expected a mapping"]),
    (GOOD.replace("provider: demo", "provider: demo\nprovider: again"), ["probes.yaml:2:1: error: catalog: duplicate key 'provider'"]),
    (GOOD.replace("    doc: Says hello.", "    doc: Says hello.\n    ticks: true"),
     ["'ticks: true' needs 'arg0: true'"]),
    (GOOD.replace("{name: n, type: int}", "{name: n, type: int, max_len: 8}"), ["'max_len' applies to strings"]),
    (GOOD.replace("{name: n, type: int}", "{name: n, type: int, hex: yes please}"), ["'hex': expected true or false, found 'yes please'"]),
    (GOOD.replace("{name: n, type: int}", "{name: who, type: int}"), ["duplicate argument name 'who'"]),
    (GOOD.replace("{name: n, type: int}", "{name: n, type: struct q *, members: [id.nsid, dev->name]}"),
     ["probes.yaml:8:56: error: argument 'n': member 'dev->name' is not a member path like 'qid' or 'id.nsid'"]),
    (GOOD.replace("{name: n, type: int}", "{name: n, type: int, members: [qid]}"),
     ["'members' needs a struct or union pointer type"]),
    (GOOD.replace("{name: n, type: int}", "{name: n, type: void}"),
     ["probes.yaml:8:25: error: argument 'n': unsupported type 'void'"]),
    (GOOD.replace("{name: who, type: const char *}", "{name: who, type: const char *, hex: true}"),
     ["probes.yaml:7:46: error: argument 'who': 'hex' applies to integers, not strings"]),
    (GOOD + "typedefs: {'my t': int, int: long}\n", ["probes.yaml:9:12: error: typedef: 'my t' is not a C identifier",
                                                    "probes.yaml:9:25: error: typedef: 'int' is a C keyword"]),
    (GOOD + "enums:\n  - {name: e, enumerators: [A, int, A]}\n  - {name: e}\n",
     ["probes.yaml:10:32: error: enumerator 'int' is a C keyword",
      "probes.yaml:10:37: error: enum 'e': enumerator 'A' appears twice",
      "probes.yaml:11:12: error: enum 'e' is declared twice"]),
    ("arg0: true\n" + GOOD.replace("    doc: Says hello.", "    doc: Says hello.\n    ticks: true"),
     ["probes.yaml:1:1: error: ticks probes need 'clock:' under 'header:'"]),
    (GOOD + "outputs: {header: ' '}\n", ["probes.yaml:9:19: error: outputs: 'header' is empty"]),
    # Plain '=' and '<<' mean something only to PyYAML's constructor: text here.
    (GOOD.replace("provider: demo", "provider: ="), ["probes.yaml:1:11: error: 'provider': '=' is not a C identifier"]),
    (GOOD.replace("group: app", "group: <<"), ["probes.yaml:4:12: error: 'group': '<<' is not a C identifier"]),
])
def test_bad_catalog_messages(tmp_path, text, expected):
    path = write(tmp_path, text)
    messages = errors_of(path)
    for want in expected:
        assert any(want.replace("probes.yaml", str(path)) in m for m in messages), (want, messages)
    result = run_cli("header", "--catalog", path, "-o", tmp_path / "out.h")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert str(path) in result.stderr
    assert not (tmp_path / "out.h").exists()


def many_args(count: int, arg0: bool) -> str:
    args = "".join(f"      - {{name: a{i}, type: int}}\n" for i in range(count))
    return f"provider: demo\narg0: {str(arg0).lower()}\nprobes:\n  - name: p\n    group: g\n    doc: d\n    args:\n{args}"


@pytest.mark.parametrize("count, arg0, ok", [(12, False, True), (13, False, False), (11, True, True), (12, True, False)])
def test_argument_limit_counts_spdk_arg0(tmp_path, count, arg0, ok):
    path = write(tmp_path, many_args(count, arg0))
    if ok:
        assert len(load_catalog(path).probes[0].args) == count
    else:
        messages = errors_of(path)
        assert any(f"has {count} arguments; at most {12 - arg0} are allowed" in m for m in messages), messages


def test_all_problems_reported_at_once(tmp_path):
    text = (
        "provider: demo\nprobes:\n"
        "  - name: one\n    group: g\n    doc: d\n    args: [{name: x, type: nope}]\n"
        "  - name: one\n    group: g\n    doc: d\n"
        "  - name: three\n    grup: g\n    doc: d\n"
    )
    messages = errors_of(write(tmp_path, text))
    assert len(messages) == 4, messages
    assert [m.split(": error")[0].rsplit(":", 2)[1] for m in messages] == ["6", "7", "10", "11"]


def test_not_utf8(tmp_path):
    path = write(tmp_path, b"provider: demo\nprobes:\n  - name: caf\xe9\n")
    assert errors_of(path) == [f"{path}:3:14: error: file is not UTF-8 (byte 0xe9); save the catalog as UTF-8"]


def test_character_yaml_refuses_is_placed_by_line_and_column(tmp_path):
    path = write(tmp_path, "provider: demo\nprobes:\n  - name: caf\x01\n")
    assert errors_of(path) == [f"{path}:3:14: error: YAML: unacceptable character #x0001: "
                               "control characters are not allowed"]


@pytest.mark.parametrize("make, message", [
    (lambda tmp: tmp / "missing.yaml", "no such catalog file"),
    (lambda tmp: tmp, "is a directory"),
])
def test_unreadable_catalog(tmp_path, make, message):
    path = make(tmp_path)
    with pytest.raises(InputError, match=message):
        load_catalog(path)
    result = run_cli("generate", "--catalog", path)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("text, kind, size, signed", [
    ("unsigned", Kind.INTEGER, 4, False),
    ("long unsigned int", Kind.INTEGER, 8, False),
    ("const char*", Kind.STRING, 8, False),
    ("char const *", Kind.STRING, 8, False),
    ("struct spdk_nvmf_qpair *", Kind.POINTER, 8, False),
    ("const struct a * const *", Kind.POINTER, 8, False),
    ("void (*)(void *, void *)", Kind.FUNCTION_POINTER, 8, False),
    ("enum x", Kind.ENUM, 4, None),
    ("_Bool", Kind.BOOL, 1, False),
    ("char", Kind.INTEGER, 1, None),
])
def test_parse_ctype(text, kind, size, signed):
    ctype = parse_ctype(text)
    assert (ctype.kind, ctype.size, ctype.signed) == (kind, size, signed)


@pytest.mark.parametrize("text", ["", "struct", "int int2", "float", "unsigned foo", "char[]", "int )"])
def test_parse_ctype_rejects(text):
    with pytest.raises(CTypeError):
        parse_ctype(text)


def _ctype_error(text: str) -> str:
    with pytest.raises(CTypeError) as caught:
        parse_ctype(text)
    return str(caught.value)


def test_a_long_run_of_integer_words_is_read_in_linear_work():
    """Each integer word was checked against all before it: 20,000 took 4 s (a .d file's type, say)."""
    def lines(count):
        error, ran = lines_run(lambda: _ctype_error("int " * count))
        assert "is not a C integer type" in error
        return ran

    assert lines(2000) < 15 * lines(200)


def test_schema_and_loader_know_the_same_keys(tmp_path):
    """Every key the schema allows loads; the loader reads keys from it."""
    schema = load_schema()
    probe_keys = set(schema["properties"]["probes"]["items"]["properties"])
    arg_keys = set(schema["properties"]["probes"]["items"]["properties"]["args"]["items"]["properties"])
    assert probe_keys == {"name", "group", "doc", "ticks", "enabled_check", "args"}
    assert arg_keys == {"name", "type", "doc", "hex", "max_len", "length", "members"}
    full = yaml.safe_load((REPO / "probes.yaml").read_text())
    full["probes"][0]["args"][1]["doc"] = "first argument"
    full["probes"].append({"name": "extra", "group": "g", "doc": "d", "enabled_check": True, "args": [
        {"name": "s", "type": "char *", "max_len": 32, "length": "n"}, {"name": "n", "type": "size_t"},
        {"name": "q", "type": "struct q *", "members": ["qid"]}]})
    path = write(tmp_path, json.dumps(full))
    jsonschema.validate(full, schema)
    assert load_catalog(path).probe("extra").args[2].members == ("qid",)
    assert load_catalog(path).probe("extra").args[0].length == "n"
    assert load_catalog(path).probe("extra").enabled_check
