"""A catalog describes probes; it cannot write code into what is generated
from it (issue 12, part 3).

Strings that become code (include paths, the clock, C types) are parsed and
refused, with their position, unless they are what they stand for. Strings
that are only text (docs, the catalog's file name) may hold anything; every
output is then checked with the real tools for code they might inject:
gcc and g++, bpftrace 0.17 (a dry run and a real attach), the system Python.
"""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from probegen.catalog import load_catalog
from probegen.catalog.cvalidate import clock_expression
from probegen.catalog.ctype import CTypeError, parse_ctype
from probegen.errors import CatalogError
from helpers import SYSTEM_PYTHON, require, require_bpftrace
from helpers.hostile import (
    BPFTRACE_PAYLOAD, C_PAYLOAD, MARKER, PYTHON_PAYLOAD, build_site, check_all, generate, runnable_script,
)

# The catalog every case starts from; FIELD placeholders are replaced by
# JSON strings (valid YAML double-quoted scalars), so positions are known.
BASE = """\
provider: demo
arg0: true
header:
  includes: [INCLUDE]
  clock: CLOCK
typedefs:
  pg_fn: TYPEDEF
enums:
  - name: pg_state
    strip_prefix: STRIP
    enumerators: [PG_STATE_IDLE, PG_STATE_BUSY]
probes:
  - name: hello
    group: app
    doc: DOC
    ticks: true
    args:
      - name: n
        type: TYPE
        doc: ARGDOC
      - name: callback
        type: pg_fn
      - name: state
        type: enum pg_state
"""
DEFAULTS = {
    "INCLUDE": "stdint.h", "CLOCK": "pg_clock()", "TYPEDEF": "void (*)(void *)", "STRIP": "PG_STATE_",
    "DOC": "Says hello.", "TYPE": "int", "ARGDOC": "a number",
}


def catalog_text(**values) -> tuple[str, dict[str, tuple[int, int]]]:
    """The catalog with these fields, and the (line, column) of each field."""
    text = BASE
    positions = {}
    for key, default in DEFAULTS.items():
        index = text.index(key)
        line = text.count("\n", 0, index) + 1
        positions[key] = (line, index - text.rfind("\n", 0, index))
        text = text.replace(key, json.dumps(values.get(key, default)), 1)
    return text, positions


def write(directory: Path, text: str, name: str = "probes.yaml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_bytes(text.encode("utf-8"))
    return path


def refused(tmp_path: Path, field: str, value: str, *words: str) -> list[str]:
    """Load a catalog with one hostile field: it must be refused with an
    error at that field's position saying what the field should be."""
    text, positions = catalog_text(**{field: value})
    path = write(tmp_path, text)
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    diagnostics = info.value.diagnostics
    assert all(d.location.line > 0 and d.location.column > 0 for d in diagnostics), diagnostics
    line, column = positions[field]
    here = [d.message for d in diagnostics if (d.location.line, d.location.column) == (line, column)]
    assert here, f"no error at {line}:{column} for {value!r}: {[str(d) for d in diagnostics]}"
    for word in words:
        assert any(word in message for message in here), (word, here)
    # No message echoes a control character raw (a terminal would act on it).
    assert all(str(d).isprintable() for d in diagnostics), diagnostics
    return here


def test_default_values_load(tmp_path):
    text, _ = catalog_text()
    catalog = load_catalog(write(tmp_path, text))
    assert catalog.header.includes == ("stdint.h",) and catalog.header.clock == "pg_clock()"


# -- strings that become C: refused unless they are what they stand for ------

@pytest.mark.parametrize("include", [
    'spdk/env.h"\n#include "/dev/zero',  # a quote and a newline: the example
    'spdk/env.h" /* */ "x.h',
    "../../../../../../dev/zero",  # climbing out of the include path
    "/dev/stdin",
    "spdk/./env.h",
    "a.h> int x; <b.h",
    "spdk/ env.h",
    "spdk//env.h",
    "env.h\\",
    "env.h??/",
    "env.h\r",
    "",
])
def test_include_must_be_a_plain_relative_path(tmp_path, include):
    refused(tmp_path, "INCLUDE", include, "include path")


@pytest.mark.parametrize("clock", [
    "0\r#error injected",  # the example: CR then a directive
    "0\n#error injected",
    "0 /* comment */",
    "0 // comment",
    "f(); g()",
    "({ system(0); 0; })",
    "0 ??/",
    "a ??= b",
    '"text"',
    "'c'",
    "a ## b",
    "#x",
    "a %: b",  # digraph of '#'
    "a <: 0 :>",
    "x = 1",
    "x++",
    "f(",
    "a ? b",
    "sizeof(int)",
    "0x",
    "1 2",
    "\\",
    "\u2028",
    "(" * 40 + "0" + ")" * 40,
    "",
    # Valid C that gcc -Wall -Werror refuses in every probe site (-Wparentheses).
    "base|ticks + f() * 2",
    "a && b || c",
    "a < b < c",
    "a & b == c",
])
def test_clock_must_be_one_c_expression(tmp_path, clock):
    refused(tmp_path, "CLOCK", clock, "clock")


@pytest.mark.parametrize("clock", [
    "spdk_get_ticks()", "(uint64_t)rdtsc()", "g_clock.ticks + f(1, 2) * -x[3]", "a ? b() : 0",
    "(struct clock *)p->now", "1ULL << 40", "0x10", "ticks_hz / 1000", "(base | ticks) + f() * 2",
])
def test_clock_expressions_are_kept_as_written(clock):
    assert clock_expression(clock) == clock


def test_clock_is_rebuilt_from_its_tokens():
    assert clock_expression("  f( 1 ,2 )  ") == "f( 1 ,2 )"


@pytest.mark.parametrize("field", ["TYPE", "TYPEDEF"])
@pytest.mark.parametrize("ctype", [
    "void (*)(void); injected(); void (*q)(void)",  # the example
    "void (*)(int /* */)",
    "void (*)(int) /* x */",
    "int (*)(void) = 0; int y",
    "int\n#error x",
    "int\r",
    "int\\",
    "int ??/",
    "void (*)(void { })",
    "void (*)(int, )",
    "void (*)(void, int)",
    "void (*)(...)",
    "void (*)(\"s\")",
    "int # x",
    "struct s; int",
    "void (**)(void)",
    "int (*)(void)(void)",
    "char *\u2028",
    "void (*)(" * 12 + "void" + ")(void)" * 12,
])
def test_c_types_must_parse_whole(tmp_path, field, ctype):
    refused(tmp_path, field, ctype, "type")


@pytest.mark.parametrize("text, spelling", [
    ("void (*)(void *, void *)", "void( *)(void *, void *)"),
    ("int (*)(const char *fmt, ...)", "int( *)(const char *, ...)"),
    ("void (*)(void (*cb)(int), struct s *p)", "void( *)(void( *)(int), struct s *)"),
    ("char *(*)(unsigned long int n)", "char *( *)(unsigned long int)"),
    ("const   char   *", "const char *"),
])
def test_generated_c_spells_the_parsed_type(text, spelling):
    """Generated code writes the accepted tokens, parameter names left out
    (a name could be a macro parameter of the probe macro)."""
    assert parse_ctype(text).spelling == spelling


@pytest.mark.parametrize("text", ["long long long", "short char", "signed unsigned", "int int", "long double double"])
def test_integer_keywords_must_make_a_type(text):
    with pytest.raises(CTypeError):
        parse_ctype(text)


@pytest.mark.parametrize("field, value", [
    ("STRIP", "PG_\x1b[2J"),
    ("STRIP", "PG\u202e"),
    ("STRIP", "PG\n"),
    ("STRIP", "PG\t"),
    ("DOC", "bidi \u202e override"),  # reads differently from how it compiles
    ("DOC", "nul \x00 here"),
    ("ARGDOC", "escape \x1b[31m"),
    ("ARGDOC", "del \x7f"),
])
def test_control_characters_are_refused(tmp_path, field, value):
    refused(tmp_path, field, value, "character U+")


def test_refusal_is_one_line_per_problem_and_exit_2(tmp_path):
    text, positions = catalog_text(INCLUDE='x.h"\n#error a', CLOCK="0\r#error b", TYPE="void (*)(void); f()")
    path = write(tmp_path, text)
    result = subprocess.run([sys.executable, "-m", "probegen", "header", "--catalog", str(path), "-o",
                             str(tmp_path / "out.h")], capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    for field in ("INCLUDE", "CLOCK", "TYPE"):
        line, column = positions[field]
        assert f"{path}:{line}:{column}: error:" in result.stderr, (field, result.stderr)
    assert not (tmp_path / "out.h").exists()
    assert "\r" not in result.stderr and "#error a" not in result.stderr.replace("\\u000a#error a", "")


# -- strings that are only text: escaped wherever they land ------------------

def utf7(text: str) -> str:
    """Text as UTF-7 spells it (what a 'coding: utf-7' comment would decode)."""
    return codecs.encode(text, "utf-7").decode("ascii")


HOSTILE_DOCS = [
    f"a */ {C_PAYLOAD} /* b",
    f"a\n#define {MARKER}\n{C_PAYLOAD}",
    f"*??/\n/ {C_PAYLOAD}",
    "ends with a backslash \\",
    "ends with a trigraph ??/",
    f"a\n{BPFTRACE_PAYLOAD}\n// b",
    f"a\r{BPFTRACE_PAYLOAD}",
    f"a\n{PYTHON_PAYLOAD}\n#",
    f"a\r{PYTHON_PAYLOAD}",
    f'""" + {PYTHON_PAYLOAD} + """',
    f"a\u2028{PYTHON_PAYLOAD}",
    f"a\x85{PYTHON_PAYLOAD}",
    f"a\x0c\x0b{PYTHON_PAYLOAD}",
    f"hi {utf7(chr(10) + PYTHON_PAYLOAD)}",  # only code if the file is decoded as UTF-7
    f"--> <script>{MARKER}</script> <!--",
    "| table | breaker | `code` *em* <b>",
    "# heading\n1. list\n> quote",
]

# Anything but '/' and NUL may name a file.
HOSTILE_FILE_NAMES = [
    f"c\n{PYTHON_PAYLOAD}\n#.yaml",
    f"c\n{BPFTRACE_PAYLOAD}\n.yaml",
    f"c *\\\n{C_PAYLOAD}\n??=\\.yaml",  # ('*/' cannot be in a file name)
    f"c\r{PYTHON_PAYLOAD}\r.yaml",
    f'c""" {PYTHON_PAYLOAD} """.yaml',
    "x coding:utf-7 y.yaml",  # the encoding declaration attack, with the UTF-7 doc above
    "x -*- coding: utf-7 -*- y.yaml",
    f"c --> <!-- {MARKER}.yaml",
    f"c\u2028{PYTHON_PAYLOAD}.yaml",
    "c\x1b[2J\x07 \\",
    "`ticks` | *x*.yaml",
]


@pytest.fixture(scope="module")
def hostile_text_outputs(tmp_path_factory):
    """Every output of catalogs whose docs and file names are hostile."""
    root = tmp_path_factory.mktemp("hostile_text")
    outputs = []
    for number, name in enumerate(HOSTILE_FILE_NAMES):
        doc = HOSTILE_DOCS[number % len(HOSTILE_DOCS)]
        text, _ = catalog_text(DOC=doc, ARGDOC=HOSTILE_DOCS[(number + 5) % len(HOSTILE_DOCS)])
        path = write(root / f"c{number}", text, name)
        outputs.append(generate(load_catalog(path), root / f"c{number}" / "out"))
    # Every doc, in one catalog.
    for number, doc in enumerate(HOSTILE_DOCS):
        text, _ = catalog_text(DOC=doc, ARGDOC=doc)
        path = write(root / f"d{number}", text, "docs.yaml")
        outputs.append(generate(load_catalog(path), root / f"d{number}" / "out"))
    # A file name that is not UTF-8 (a Linux file name is bytes).
    odd = root / "odd"
    odd.mkdir()
    text, _ = catalog_text()
    raw = os.path.join(os.fsencode(odd), b"caf\xe9 \xff.yaml")
    with open(raw, "wb") as f:
        f.write(text.encode())
    outputs.append(generate(load_catalog(Path(os.fsdecode(raw))), odd / "out"))
    return root, outputs


@pytest.mark.slow
def test_hostile_text_is_inert_in_every_output(hostile_text_outputs):
    root, outputs = hostile_text_outputs
    check_all(outputs, root / "run")


def test_hostile_text_is_kept_readable(hostile_text_outputs):
    """Escaped, not dropped: the header comment still shows the doc."""
    _, outputs = hostile_text_outputs
    header = outputs[0].header.read_text()
    assert "Made from c " in header
    python = (outputs[0].tools[0]).read_text()
    assert f"# Made from c {PYTHON_PAYLOAD} #.yaml: change the catalog and regenerate." in python
    utf7_tool = next(o for o in outputs if "coding" in o.catalog.path.name and "-*-" not in o.catalog.path.name)
    assert "coding :utf-7" in utf7_tool.tools[0].read_text()


def test_hostile_text_scripts_load_and_run(hostile_text_outputs, tmp_path):
    """A real attach: bpftrace 0.17 runs all.bt against the program built
    from the header; it prints the probe's line and nothing injected."""
    require_bpftrace()
    _, outputs = hostile_text_outputs
    outputs = outputs[1]  # the file name with a bpftrace probe in it
    binary = build_site(outputs)
    script = runnable_script(outputs.directory / "bpf" / "all.bt", binary)
    result = subprocess.run(["bash", "-c", 'ulimit -l unlimited 2>/dev/null; exec bpftrace -c "$1" "$2"', "-",
                             str(binary), str(script)], capture_output=True, text=True, timeout=120,
                            cwd=tmp_path, errors="replace")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Attaching 1 probe..." in result.stdout
    assert " hello ticks=" in result.stdout and " n=0 " in result.stdout, result.stdout
    assert MARKER not in result.stdout and not (tmp_path / MARKER).exists()


def test_depfile_refuses_a_catalog_name_make_would_run(tmp_path):
    """In a depfile a newline ends the rule and a tab starts a recipe make
    runs: a catalog named like that cannot be listed in one."""
    text, _ = catalog_text()
    name = "a\n\ttouch PGINJECT\nx:.yaml"
    path = write(tmp_path, text, name)
    result = subprocess.run([sys.executable, "-m", "probegen", "header", "--catalog", name, "-o", "out.h",
                             "--depfile", "out.d"], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "a depfile cannot name a path with control characters" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out.d").exists()
    assert path.exists() and not (tmp_path / MARKER).exists()


def test_docs_cannot_speak_to_probegen_trace(tmp_path):
    """`probegen trace` replaces __EXE__ and __PID__ anywhere in a script
    and reads BPFTRACE_STRLEN= from it: in catalog text they are text."""
    from probegen.runtime import trace
    from probegen.generators import bpftrace

    doc = "BPFTRACE_STRLEN=999 usdt:__EXE__:nothere usdt:__EXE__:demo:nothere __PID__"
    text, _ = catalog_text(DOC=doc, ARGDOC=doc)
    catalog = load_catalog(write(tmp_path, text, "BPFTRACE_STRLEN=300 __EXE__ __PID__.yaml"))
    for script in bpftrace.render_files(catalog, tmp_path / "bpf"):
        assert trace.strlen(script.text) is None, script.path
        assert "__PID__" not in script.text
        # the attach points probegen trace resolves: the probe's own, none from the docs
        assert trace.wanted_probes(trace.Script(str(script.path), script.text)) == {("demo", "hello")}, script.path


def test_dwarf_names_cannot_end_the_bcc_program_string(tmp_path):
    """A binary is not trusted either: a struct name in its DWARF (patched
    here to hold three quotes and Python) is quoted in a comment of the C
    definitions, which the BCC tool carries in a r\"\"\"...\"\"\" string."""
    require("gcc", "gcc")
    if not Path(SYSTEM_PYTHON).exists():
        pytest.skip(f"{SYSTEM_PYTHON} not found")
    payload = "a\"\"\"+str(__import__('pathlib').Path('" + MARKER + "').touch())+r\"\"\""
    name = "pgw" + "A" * (len(payload) - 3)  # patched in place: same length
    source = tmp_path / "dw.c"
    source.write_text(
        "#include <sys/sdt.h>\n"
        f"struct {name} {{ int a; }};\n"
        f"struct pg_req {{ int id; struct {name} inner; }};\n"
        "int main(void) { struct pg_req r = { 1, { 2 } }; struct pg_req *p = &r;\n"
        "\tDTRACE_PROBE1(pgdw, submit, p); return 0; }\n")
    built = tmp_path / "dw"
    result = subprocess.run(["gcc", "-g", "-O0", str(source), "-o", str(built)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    data = built.read_bytes()
    assert data.count(name.encode()) == 1
    hostile = tmp_path / "dw_hostile"
    hostile.write_bytes(data.replace(name.encode(), payload.encode()))
    catalog = write(tmp_path, "provider: pgdw\nprobes:\n  - name: submit\n    group: io\n    doc: d\n"
                              "    args:\n      - {name: req, type: struct pg_req *, members: [id, inner.a]}\n")
    out = tmp_path / "bcc"
    result = subprocess.run([sys.executable, "-m", "probegen", "bcc", "-c", str(catalog), "-o", str(out),
                             "--binary", str(hostile), "-q"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    tool = out / "pgdw.py"  # the catalog's one tool, named after its provider
    assert "in the debug info" in tool.read_text()  # the name is quoted, as text
    ran = subprocess.run([SYSTEM_PYTHON, str(tool), "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert not (tmp_path / MARKER).exists(), "the DWARF name ran as Python"
