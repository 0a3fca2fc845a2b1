"""Property: whatever a catalog holds, probegen refuses it with a position
or every output is sound (issue 12).

Hypothesis writes catalogs whose names, docs, C types, include paths,
clocks and file names mix ordinary text with what ends comments, strings
and lines in C, bpftrace, Python and Markdown, and with payloads. Each
catalog is either refused (a CatalogError whose every diagnostic has a line
and a column) or generates outputs that the real tools accept with no
payload taking effect; those are checked together at the end (one compiler
run for all headers), see tests/helpers/hostile.py.
"""

from __future__ import annotations

import itertools

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probegen.catalog import load_catalog
from probegen.errors import CatalogError
from helpers import examples
from helpers.hostile import BPFTRACE_PAYLOAD, C_PAYLOAD, MARKER, PYTHON_PAYLOAD, check_all, generate, write_catalog


# What ends or opens something in one of the output languages.
BREAKERS = [
    "\n", "\r", "\r\n", "\x00", "\x0b", "\x0c", "\x1b", "\x7f", "\x85", "\u2028", "\u2029", "\u202e",
    "*/", "/*", "//", "\\", "??/", "??=", "#", ";", "{", "}", "(", ")", '"', "'", '"""', "`", "%",
    "-->", "<!--", "|", "<", ">", " ", "\t", "coding:utf-7 ", "-*- coding: latin-1 -*-", "+AAo-",
]
PAYLOADS = [f"\n{PYTHON_PAYLOAD}\n", f"\n{BPFTRACE_PAYLOAD}\n", f" */ {C_PAYLOAD} /* ", f"\r#define {MARKER} 1\r"]
WORDS = ["probe", "x", "Ticks", "spdk", "é", "\u00a0", "1", "_", "."]

def sometimes(rare: st.SearchStrategy, usual: st.SearchStrategy) -> st.SearchStrategy:
    """``rare`` one time in six: a catalog has many fields, and one broken
    field refuses it; both outcomes must stay common."""
    return st.sampled_from([False] * 5 + [True]).flatmap(lambda pick: rare if pick else usual)


# Docs may hold these only in part: control characters that are not layout
# and bidirectional overrides are refused there too.
REFUSED_IN_DOCS = {"\x00", "\x1b", "\x7f", "\u202e"}

fragments = st.sampled_from(BREAKERS + PAYLOADS + WORDS)
doc_fragments = st.sampled_from([f for f in BREAKERS if f not in REFUSED_IN_DOCS] + PAYLOADS + WORDS)
# Mostly text docs accept, sometimes anything: both outcomes stay common.
hostile_text = sometimes(st.lists(fragments, max_size=8).map("".join),
                         st.lists(doc_fragments, max_size=8).map("".join))


def mutated(valid: list[str]) -> st.SearchStrategy[str]:
    """A valid value, or one with a breaker inserted somewhere."""
    def insert(value: str, at: int, fragment: str) -> str:
        at %= len(value) + 1
        return value[:at] + fragment + value[at:]

    base = st.sampled_from(valid)
    broken = st.builds(insert, base, st.integers(0, 40), fragments)
    return sometimes(broken, base)



identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
names = sometimes(mutated(["p_one", "p_two"]), identifiers.map("p_".__add__))
arg_names = sometimes(mutated(["a_n"]), identifiers.map("a_".__add__))
ctypes = mutated([
    "int", "unsigned long", "const char *", "uint32_t", "struct pg_s *", "void (*)(void *)",
    "int (*)(const char *, ...)", "char **", "bool", "int64_t", "size_t", "void *",
    "void (*)(struct pg_s *, int (*)(void))",
])
includes = mutated(["stdint.h", "stddef.h", "sys/types.h"])
clocks = mutated(["pg_clock()", "(uint64_t)pg_clock()", "pg_base + pg_clock() * 2", "pg_on ? pg_clock() : 0"])
# Anything but '/' and NUL names a file; keep it short of NAME_MAX.
file_names = st.lists(fragments, max_size=6).map(
    lambda parts: ("".join(parts).replace("/", "_").replace("\x00", "_") + "c.yaml")[-200:])


@st.composite
def catalogs(draw) -> tuple[str, dict]:
    arg0 = draw(st.booleans())
    probes = []
    for _ in range(draw(st.integers(1, 2))):
        args = [{"name": draw(arg_names), "type": draw(ctypes), "doc": draw(hostile_text)}
                for _ in range(draw(st.integers(0, 3)))]
        probe = {"name": draw(names), "group": "g", "doc": draw(hostile_text), "args": args}
        if arg0 and draw(st.booleans()):
            probe["ticks"] = True
        probes.append(probe)
    header = {"includes": draw(st.lists(includes, max_size=2))}
    if arg0:
        header["clock"] = draw(clocks)
    catalog = {"provider": "demo", "arg0": arg0, "header": header, "probes": probes}
    return draw(file_names), catalog


@pytest.mark.slow
def test_hostile_catalogs_are_refused_with_a_position_or_generate_sound_outputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    numbers = itertools.count()
    accepted = []
    refused = []

    @settings(max_examples=examples(40), deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(catalogs())
    def load_or_refuse(case):
        file_name, data = case
        directory = root / f"case{next(numbers)}"
        path = write_catalog(directory, file_name, data)
        try:
            catalog = load_catalog(path)
        except CatalogError as error:
            for diagnostic in error.diagnostics:
                assert diagnostic.location.line > 0 and diagnostic.location.column > 0, (str(diagnostic), data)
                # One line each, nothing a terminal acts on (catalog text is quoted in messages).
                assert str(diagnostic).isprintable(), (str(diagnostic), data)
            refused.append(path)
            return
        accepted.append(generate(catalog, directory / "out"))

    load_or_refuse()
    # Both outcomes happen: the property is not checked on one side only.
    assert accepted and refused, (len(accepted), len(refused))
    check_all(accepted, root / "run")
