"""probegen lint on scripts built to be deep or hostile: valid scripts nested
far beyond what people write lint exactly as their flat versions do (and
bpftrace 0.17 parses them too); nesting past the linter's limit, and
pathological C definitions, are one error line within a time bound, never
a RecursionError or a regex that runs for minutes."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from probegen.catalog import load_catalog
from probegen.cli import main
from probegen.errors import InputError
from probegen.checks.lint import ScriptSyntaxError, lint_text
from probegen.checks.lint.cdefs import MAX_NESTED_STRUCTS, struct_definitions
from probegen.checks.lint.lexer import CDEF, EOF, Token, tokenize
from probegen.checks.lint.parser import MAX_NESTING

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "probes.yaml"
PROBE = "usdt:__EXE__:bdev_nvme_ctrlr_release"
# A printf whose conversion does not fit its argument: the finding every
# deep script below must still report, wherever the depth is.
BAD = 'printf("%d\\n", str(arg1));'
FINDING = "%d for arg1 of bdev_nvme_ctrlr_release (name, const char *) read by str(), a string"
# Seconds any one of these scripts may take (each takes well under one).
BOUND = 10


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(CATALOG)


def deep_scripts(probe: str, bad: str) -> dict[str, str]:
    """Valid bpftrace, deep in every way the parser and checker recurse."""
    return {
        "70 nested parentheses": f"{probe} {{ $x = {'(' * 70}arg2{')' * 70}; {bad} }}",
        "400 nested parentheses": f"{probe} {{ $x = {'(' * 400}arg2{')' * 400}; {bad} }}",
        "1,000-term sum": f"{probe} {{ $x = {' + '.join(['arg2'] * 1000)}; {bad} }}",
        "1,000-term && chain": f"{probe} /{' && '.join(['arg2'] * 1000)}/ {{ {bad} }}",
        "mixed precedence": f"{probe} {{ $x = {' * 2 + 1 << 1 | '.join(['arg2'] * 500)}; {bad} }}",
        "300 nested ifs": f"{probe} {{ {'if (arg2) { ' * 300}{bad}{' }' * 300} }}",
        "1,000 else-ifs": f"{probe} {{ if (arg2 == 0) {{ $y = 0; }}"
                          + "".join(f" else if (arg2 == {i}) {{ $y = {i}; }}" for i in range(1, 1000))
                          + f" else {{ {bad} }} }}",
        "200 nested calls": f"{probe} {{ $x = {'str(' * 200}arg1{')' * 200}; {bad} }}",
        "400 nested ternaries": f"{probe} {{ $x = {'arg2 ? 1 : ' * 400}0; {bad} }}",
        "400 unary operators": f"{probe} {{ $x = {'-' * 400}arg2; {bad} }}",
    }


def timed_lint(text: str, name: str, catalog):
    start = time.monotonic()
    try:
        return lint_text(text, name, catalog)
    finally:
        assert time.monotonic() - start < BOUND, f"{name} took over {BOUND} s"


@pytest.mark.parametrize("name", list(deep_scripts(PROBE, BAD)))
def test_deep_valid_script_lints_like_a_flat_one(name, catalog):
    text = deep_scripts(PROBE, BAD)[name]
    findings = timed_lint(text, name, catalog)
    # Exactly the one finding of the flat script, at the bad printf's argument.
    assert [d.message.split(": use")[0] for d in findings] == [FINDING], findings
    assert findings[0].location.column == text.index("str(arg1));") + 1
    clean = text.replace(BAD, 'printf("%s\\n", str(arg1));')
    assert timed_lint(clean, name, catalog) == []


def test_recursion_limit_is_restored(catalog):
    before = sys.getrecursionlimit()
    timed_lint(deep_scripts(PROBE, BAD)["400 nested parentheses"], "deep", catalog)
    assert sys.getrecursionlimit() == before


@pytest.mark.skipif(shutil.which("bpftrace") is None, reason="bpftrace is not installed")
@pytest.mark.parametrize("name", ["70 nested parentheses", "400 nested parentheses", "1,000-term sum",
                                  "1,000-term && chain", "300 nested ifs", "1,000 else-ifs"])
def test_bpftrace_parses_the_deep_scripts_too(name, tmp_path, catalog):
    """The deep scripts are real bpftrace: 0.17 parses them (-d prints
    its AST). BEGIN instead of a usdt probe: nothing to resolve."""
    text = deep_scripts("BEGIN", 'printf("%d\\n", 1);')[name].replace("arg1", "1").replace("arg2", "1")
    script = tmp_path / "deep.bt"
    script.write_text(text)
    result = subprocess.run(["bpftrace", "-d", str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "AST after: parser" in result.stdout + result.stderr, \
        (result.stdout + result.stderr)[-500:]
    assert "syntax error" not in result.stderr
    assert timed_lint(text, name, catalog) == []


@pytest.mark.parametrize("text", [
    f"{PROBE} {{ $x = {'(' * (MAX_NESTING + 1)}arg2{')' * (MAX_NESTING + 1)}; }}",
    f"{PROBE} {{ $x = {'(' * 20_000}arg2{')' * 20_000}; }}",
    f"{PROBE} {{ {'if (1) { ' * (MAX_NESTING + 1)}{' }' * (MAX_NESTING + 1)} }}",
    f"{PROBE} {{ $x = {'!' * 20_000}arg2; }}",
    f"{PROBE} {{ $x = arg2{'->a' * 20_000}; }}",
    f"{PROBE} {{ $x = {'str(' * 20_000}arg1{')' * 20_000}; }}",
])
def test_nesting_past_the_limit_is_one_error_with_a_position(text, catalog):
    with pytest.raises(ScriptSyntaxError) as error:
        timed_lint(text, "deep.bt", catalog)
    message = str(error.value)
    assert "nesting too deep" in message and "\n" not in message
    assert re.match(r"deep\.bt:1:\d+: error: ", message), message


def test_cli_too_deep_exit_2_one_line(tmp_path, capsys):
    script = tmp_path / "deep.bt"
    script.write_text(f"{PROBE} {{ $x = {'(' * 1000}arg2{')' * 1000}; }}\n")
    assert main(["lint", "-c", str(CATALOG), str(script)]) == 2
    err = capsys.readouterr().err
    assert "nesting too deep" in err and "Traceback" not in err
    assert sum("nesting too deep" in line for line in err.splitlines()) == 1


# -- pathological text for the lexer and the C definition reader ------------

# A guard against hangs, not a speed target: the backtracking readers took
# 20 to 48 s on these texts; linear ones take well under a second, and the
# bound leaves room for a machine busy with other work.
HANG_BOUND = 15

HOSTILE_DEFINITIONS = {
    "unclosed comments": "struct a { " + "/*" * 50_000 + " int x; };",
    "stars before no name": "struct a { int " + "* " * 50_000 + "! ; };",
    "words before no name": "struct a { " + "a " * 50_000 + "! ; };",
    "one long word": "struct a { int " + "x" * 200_000 + "!; };",
    "spaces after struct": "struct" + " " * 100_000 + "x",
    "array bounds": "struct a { int x" + "[1]" * 50_000 + "!; };",
    "many members": "struct a { int " + "a, " * 50_000 + "b; };",
    "nested structs": "struct a { " + "struct b { " * 5_000 + "int x;" + "} y;" * 5_000 + " };",
    "unclosed structs": "struct a {" * 50_000,
    "unclosed braces": "struct a {" + "{" * 100_000,
}


@pytest.mark.parametrize("name", list(HOSTILE_DEFINITIONS))
def test_c_definition_reader_is_linear_on_hostile_text(name):
    text = HOSTILE_DEFINITIONS[name]
    start = time.monotonic()
    try:
        struct_definitions([Token(CDEF, text, 1, 1)], "hostile.bt")
    except ScriptSyntaxError as error:
        assert f"structs nested more than {MAX_NESTED_STRUCTS} deep" in str(error)
    assert time.monotonic() - start < HANG_BOUND, name


def test_c_definitions_still_read_members():
    text = """struct a {
        const char *name[4] : 3; /* not really a bitfield, but parsed */
        unsigned long long x, *y, z[2][3];
        struct { int inner; };
        void (*cb)(int);
    };"""
    members = struct_definitions([Token(CDEF, text, 3, 1)], "s.bt")["a"].members
    assert set(members) == {"name", "x", "y", "z", "inner", "cb"}
    assert (members["x"].location.line, members["x"].location.column) == (5, 28)
    assert (members["z"].location.line, members["z"].location.column) == (5, 35)


def test_bit_width_int_cannot_read_is_no_crash():
    # '²' is a digit to str.isdigit() but no number to int().
    members = struct_definitions([Token(CDEF, "struct a { int x : \u00b2; int y; };", 1, 1)], "s.bt")["a"].members
    assert set(members) == {"x", "y"}


def test_struct_aligned_zero_is_no_crash():
    # aligned(0) on a struct, as on a member, asks for no alignment (it divided by zero).
    text = "struct b { struct a { } __attribute__((aligned(0))) y; int z; };"
    members = struct_definitions([Token(CDEF, text, 1, 1)], "s.bt")["b"].members
    assert members["z"].bit == 0


HUGE = "1" * 5_000  # more digits than int() reads


@pytest.mark.parametrize("text", [f"int x[{HUGE}]", f"int x : {HUGE}", f"int x __attribute__((aligned({HUGE})))"])
def test_numbers_of_thousands_of_digits_are_no_crash(text):
    # They raised int()'s ValueError; now a number no real size has is not understood.
    members = struct_definitions([Token(CDEF, f"struct a {{ {text}; int y; }};", 1, 1)], "s.bt")["a"].members
    assert set(members) == {"x", "y"}


def test_arg_of_thousands_of_digits_is_past_the_arguments(catalog):
    findings = lint_text(f"{PROBE} {{ print(arg{HUGE}); print(arg{'0' * 5_000}1); }}", "s.bt", catalog)
    assert [(f.location.column, f.rule) for f in findings] == [(len(PROBE) + 10, "arg-out-of-range")]


@pytest.mark.parametrize("text", [
    "struct a { int x; }" + " " * 200_000 + "x",
    "#define X \\\n" * 50_000 + "BEGIN { }\n",
    "BEGIN { " + "$x = 1; " * 50_000 + "}\n",
    "BEGIN {\n" + "$x = 1;\n" * 50_000 + "}\n",
])
def test_lexer_is_linear(text):
    start = time.monotonic()
    try:
        tokens = tokenize(text, "long.bt")
    except InputError:
        return
    assert time.monotonic() - start < HANG_BOUND
    assert tokens[-1].kind == EOF
