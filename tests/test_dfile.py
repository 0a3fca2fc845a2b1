"""Reading SystemTap/DTrace provider files (probegen.importers.dfile) and importing
them as catalogs (probegen import FILE.d)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from probegen.catalog import load_catalog
from probegen.importers.dfile import imported_catalog, parse_provider_file, read_provider_file
from probegen.errors import InputError
from helpers import run_cli

D_DIR = Path(__file__).parent / "d"
SHOP = D_DIR / "shop.d"


def probes_of(text: str, provider: str | None = None) -> dict[str, list[tuple[str, str | None]]]:
    source = parse_provider_file(text, "t.d")
    return {p.name: [(a.type, a.name) for a in p.args] for p in source.provider(provider).probes}


def test_shop_file_reads_as_written():
    source = read_provider_file(SHOP)
    assert [p.name for p in source.providers] == ["shop"]
    probes = {p.name: [(a.type, a.name) for a in p.args] for p in source.providers[0].probes}
    assert probes == {
        "order__start": [("unsigned int", None), ("const char *", None)],
        "order__done": [("unsigned int", "id"), ("int", "status"), ("uint64_t", "elapsed")],
        "basket__add": [("struct basket *", "b"), ("int64_t", "price"), ("uintptr_t", "cookie")],
        "log": [("char *", "message"), ("unsigned char", None)],
        "tick": [("shop_time_t", None)],
        "total": [("unsigned long long", None), ("long long", None)],
        "idle": [],
        "shutdown": [],
        "pay__card__check": [("const char *", "card"), ("unsigned short", None), ("long", None),
                             ("signed char", None)],
    }
    assert source.typedefs == (("shop_time_t", "unsigned long long"),)
    assert source.providers[0].probes[0].location == (str(SHOP), 17, 8)


# Grammar real files use beyond shop.d (forms SystemTap's dtrace does not
# all read, but illumos/macOS dtrace and cpp-expanded files do).
@pytest.mark.parametrize("text, expected", [
    ("provider p { probe a(void); };", {"a": []}),
    ("provider p { probe a(unsigned long long when, long long int x); }", {
        "a": [("unsigned long long", "when"), ("long long int", "x")]}),
    ("provider p { probe a(char buf[16], int v[]); };", {"a": [("char *", "buf"), ("int *", "v")]}),
    ("provider p { probe a(struct in *i) : (struct out *o); };", {"a": [("struct in *", "i")]}),
    ("provider p { probe a(char **argv, const char * const name, void *p); };", {
        "a": [("char **", "argv"), ("const char * const", "name"), ("void *", "p")]}),
    ("provider p { probe a(string, const string s); };", {"a": [("char *", None), ("const char *", "s")]}),
    ("#define A B\n#define B unsigned \\\n  short\nprovider p { probe a(A); };", {"a": [("unsigned short", None)]}),
    ("#define X int\n#undef X\n#define X long\nprovider p { probe a(X); };", {"a": [("long", None)]}),
    ("#define F(x) x\n# pragma D attributes Evolving/Evolving/Common provider p args\n"
     "provider p { probe a(int); };", {"a": [("int", None)]}),
    ("typedef struct conn { int fd; } conn_t;\ntypedef conn_t *conn_p;\nenum e { E1 };\nstruct s;\n"
     "provider p { probe a(conn_t *, conn_p, enum e); };", {"a": [("conn_t *", None), ("conn_p", None), ("enum e", None)]}),
    ("typedef enum { E1 } e_t;\ntypedef enum e { E2 } e2_t;\ntypedef union { int i; } u_t;\n"
     "provider p { probe a(e_t *, e2_t *, u_t *); };", {"a": [("e_t *", None), ("e2_t *", None), ("u_t *", None)]}),
    # A qualified struct by value is skipped as an unqualified one is (it was refused: 'passed by value').
    ("typedef const struct x cx_t;\ntypedef struct y volatile vy_t;\ntypedef struct x x_t;\ntypedef const struct z;\n"
     "provider p { probe a(cx_t *, vy_t *, x_t *); };", {"a": [("cx_t *", None), ("vy_t *", None), ("x_t *", None)]}),
    ("provider p /* c */ { // c\n probe /* c */ a /* c */ ( int /* c */ ) ; } ;", {"a": [("int", None)]}),
    ("provider p { probe a(int x, int x, int _y); };", {"a": [("int", "x"), ("int", "x"), ("int", "_y")]}),
])
def test_grammar(text, expected):
    assert probes_of(text) == expected


def test_doc_comment_tags():
    """A tag's text runs to the next tag: only @param text is kept, never in the probe's doc."""
    text = ("provider p {\n/**\n * Fired on a get.\n * @param key the key,\n *   not NUL-terminated\n"
            " * @return nothing,\n *   ever\n * @param n its length\n */\nprobe get(char *key, int n);\n};")
    probe = parse_provider_file(text, "p.d").providers[0].probes[0]
    assert probe.doc == "Fired on a get."
    assert probe.param_docs == (("key", "the key, not NUL-terminated"), ("n", "its length"))
    one_line = parse_provider_file("provider p { /** @param n the count */ probe a(int n); };", "p.d")
    probe = one_line.providers[0].probes[0]
    assert (probe.doc, probe.param_docs) == ("", (("n", "the count"),))

def test_doc_comments_of_many_blank_lines_take_linear_time():
    """Blank lines before a tag are the text's; 50,000 of them were each searched to their end for an '@'
    (14 s)."""
    text = "provider p {\n/** Fired.\n *\n\n  @param n its\n\n length\n" + "\n" * 50_000 + " */ probe a(int n);\n};"
    started = time.monotonic()
    probe = parse_provider_file(text, "p.d").providers[0].probes[0]
    assert time.monotonic() - started < 5
    assert (probe.doc, probe.param_docs) == ("Fired.", (("n", "its length"),))


def test_several_providers_need_a_choice():
    text = "provider one { probe a(int); };\nprovider two { probe b(long); };"
    assert probes_of(text, "two") == {"b": [("long", None)]}
    with pytest.raises(InputError, match=r"t\.d: error: 2 providers \(one, two\); a catalog has one: give --provider"):
        probes_of(text)
    with pytest.raises(InputError, match=r"no provider 'three' \(the file has: one, two\)"):
        probes_of(text, "three")


@pytest.mark.parametrize("text, message", [
    ("provider p { probe a(int); };\n/* open", "t.d:2:1: error: unterminated comment"),
    ("provider p {\n  probe a(int)\n};", "t.d:3:1: error: expected ';' after probe 'a', found '}'"),
    ("provider p { probe a(Oid); };", "t.d:1:22: error: probe 'a': argument 1: unknown type 'Oid'; declare it in "
                                     "the file with its real type ('typedef TYPE Oid;'"),
    ("provider p { probe a(struct s); };", "t.d:1:22: error: probe 'a': argument 1: 'struct s' passed by value"),
    ("provider p { probe a(int); probe a(long); };", "t.d:1:28: error: probe 'a' is declared twice (first at t.d:1:20)"),
    ("/* nothing */", "t.d: error: no 'provider NAME { ... };' in the file"),
    ("provider p { probe __a(int); };", "t.d:1:20: error: probe '__a': a probe name is a C identifier"),
    ("provider p { probe a(int,); };", "t.d:1:26: error: probe 'a': argument 2 has no type"),
    ("provider p { probe a(int; };", "t.d:1:25: error: probe 'a': expected ',' or ')'"),
    ("provider p { probe a(int); ", "t.d:1:1: error: provider 'p': no closing '}'"),
    ("provider p { probe a(int @); };", "t.d:1:26: error: unexpected character '@'"),
    ("provider 1p { };", "t.d:1:10: error: expected the provider's name, found '1p'"),
    ("int x;", "t.d:1:1: error: expected 'provider', 'typedef' or a struct declaration, found 'int'"),
    ("provider p { probe a(char buf[16]) : (string; };", "t.d:1:45: error: probe 'a': expected ',' or ')'"),
])
def test_errors_name_file_line_column(text, message):
    with pytest.raises(InputError) as caught:
        parse_provider_file(text, "t.d")
    assert str(caught.value).startswith(message), str(caught.value)
    assert "\n" not in str(caught.value)


def test_macros_that_double_each_other_are_refused():
    text = "#define X0 int\n" + "".join(f"#define X{i} X{i - 1} X{i - 1}\n" for i in range(1, 41))
    with pytest.raises(InputError, match=r"t\.d:42:22: error: #define expansions give more than 100,000 tokens"):
        parse_provider_file(text + "provider p { probe a(X40); };", "t.d")


def test_macros_that_expand_to_nothing_count():
    """A macro of 50,000 empty ones, used 50,000 times, gave no token and so was never stopped (hours)."""
    text = "#define B\n#define A " + "B " * 50_000 + "\n" + "A " * 50_000 + "\nprovider p { probe a(); };"
    started = time.monotonic()
    with pytest.raises(InputError, match=r"t\.d:3:\d+: error: #define expansions give more than 100,000 tokens"):
        parse_provider_file(text, "t.d")
    assert time.monotonic() - started < 5
    once = parse_provider_file(text.replace("A " * 50_000, "A "), "t.d")  # 50,000 tokens: within the limit
    assert [p.name for p in once.provider(None).probes] == ["a"]


def test_import_writes_a_catalog_that_loads(tmp_path, capsys):
    out = tmp_path / "shop.yaml"
    code, _, err = run_cli(capsys, "import", SHOP, "-o", out)
    assert (code, err) == (0, "")
    catalog = load_catalog(out)
    assert catalog.provider == "shop" and catalog.header.style == "dtrace"
    assert catalog.header.typed_prefix == "SHOP" and catalog.header.enable_macro is None
    assert [p.name for p in catalog.probes][:2] == ["order__start", "order__done"]
    done = catalog.probe("order__done")
    assert [(a.name, a.ctype.spelling) for a in done.args] == [
        ("id", "unsigned int"), ("status", "int"), ("elapsed", "uint64_t")]
    assert [a.name for a in catalog.probe("order__start").args] == ["arg0", "arg1"]
    assert catalog.probe("tick").args[0].ctype.alias == "shop_time_t"
    text = out.read_text()
    assert "style: dtrace" in text and 'shop_time_t: "unsigned long long"' in text
    # --from-d reads it the same way; stdout when no -o.
    code, printed, _ = run_cli(capsys, "import", "--from-d", SHOP)
    assert code == 0 and printed == text


def test_imported_argument_names_are_usable():
    from probegen.importers.dfile import imported_catalog

    source = parse_provider_file("provider p { probe a(int x, int x, int _y, char *name); };", "t.d")
    names = [a.name for a in imported_catalog(source).probes[0].args]
    assert names == ["x", "arg1", "arg2", "name"]


def test_import_errors_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.d"
    bad.write_text("provider p {\n  probe a(Oid);\n};\n")
    code, _, err = run_cli(capsys, "import", bad)
    assert code == 2
    assert err.startswith(f"{bad}:2:11: error: probe 'a': argument 1: unknown type 'Oid'")
    code, _, err = run_cli(capsys, "import", "--from-d", tmp_path / "two.d", tmp_path / "missing-binary")
    assert code == 2 and len(err.splitlines()) == 1 and "missing-binary" in err  # --from-d takes binaries now
    code, _, err = run_cli(capsys, "import", "some-binary")
    assert code == 2 and "--provider NAME is needed" in err
    two = tmp_path / "two.d"
    two.write_text("provider a { probe x(); };\nprovider b { probe y(); };\n")
    code, _, err = run_cli(capsys, "import", two)
    assert code == 2 and "give --provider NAME" in err
    code, printed, _ = run_cli(capsys, "import", two, "--provider", "b")
    assert code == 0 and "provider: b\n" in printed


def test_open_comments_in_directives_take_linear_time():
    """A comment left open in a directive runs to its end, as in cpp; 100,000 of them each searched to
    the end for a '*/' (minutes)."""
    started = time.monotonic()
    source = parse_provider_file("#define T int /* open\n#define X " + "/* " * 100_000 + "\n"
                                 "provider p { probe a(T); };", "t.d")
    assert time.monotonic() - started < 5
    assert [a.type for a in source.provider(None).probes[0].args] == ["int"]


def test_param_docs_of_many_arguments_take_linear_time():
    """Each argument's @param doc was looked up in a dict built again for each argument."""
    count = 20_000
    text = ("provider p {\n/**\n" + "".join(f" * @param a{i} doc {i}\n" for i in range(count)) + " */\n"
            "probe a(" + ", ".join(f"int a{i}" for i in range(count)) + ");\n};\n")
    source = parse_provider_file(text, "t.d")
    started = time.monotonic()
    catalog = imported_catalog(source)
    assert time.monotonic() - started < 5
    assert catalog.probes[0].args[-1].doc == f"doc {count - 1}"
