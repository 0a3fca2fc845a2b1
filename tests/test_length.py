"""Strings with a length (`length: keylen`): a key passed with its length,
not NUL-terminated, as memcached passes keys. The catalog checks the name
at its place; docs' one-liner, lint, the generated bpftrace scripts (run by
probegen trace) and the BCC tool read exactly that many bytes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers import SYSTEM_PYTHON, compile_c, require_bpftrace, require_sdt, run_cli

CATALOG = """\
provider: kv
header:
  style: dtrace
probes:
  - name: get
    group: kv
    doc: A key is looked up.
    args:
      - {name: key, type: const char *, length: keylen, doc: the key}
      - {name: keylen, type: uint8_t, doc: its length}
  - name: set
    group: kv
    doc: A key is stored.
    args:
      - {name: key, type: const char *, length: keylen, max_len: 100, doc: the key}
      - {name: keylen, type: size_t, doc: its length}
"""

PROGRAM = r"""
#include <stdint.h>
#include <string.h>
#include "kv_probes.h"

int main(void)
{
	char keys[2][16];
	strcpy(keys[0], "alphaXYZ");
	strcpy(keys[1], "ab\ncdXYZ");
	for (int i = 0; i < 2; i++)
		KV_GET(keys[i], (uint8_t)5);
	return 0;
}
"""


@pytest.fixture
def catalog(tmp_path) -> Path:
    path = tmp_path / "probes.yaml"
    path.write_text(CATALOG)
    return path


def test_length_names_an_integer_argument_of_the_probe(tmp_path, capsys, catalog):
    from probegen.catalog import load_catalog

    assert load_catalog(catalog).probe("get").args[0].length == "keylen"
    bad = tmp_path / "bad.yaml"
    bad.write_text(CATALOG.replace("length: keylen", "length: nope").replace(
        "{name: keylen, type: uint8_t,", "{name: keylen, type: uint8_t, length: key,") + """\
  - name: put
    group: kv
    doc: A key is stored.
    args:
      - {name: key, type: const char *, length: key, doc: the key}
      - {name: value, type: const char *, length: key, doc: a string is no length}
""")
    code, out, err = run_cli(capsys, "header", "-c", bad, "-o", "-")
    lines = err.splitlines()
    assert code == 2 and out == "" and "Traceback" not in err
    text = bad.read_text().splitlines()
    places = sorted(tuple(map(int, line.split(":")[1:3])) for line in lines if line.startswith(str(bad)))
    expected = sorted((number, line.index("length:") + len("length: ") + 1) for number, line in enumerate(text, 1)
                      if "length:" in line)
    assert places == expected, err


def test_docs_and_lint_read_exactly_the_length(tmp_path, capsys, catalog):
    script = tmp_path / "t.bt"
    script.write_text('usdt:*:kv:get { printf("%s\\n", str(arg0)); }\n')
    code, out, _ = run_cli(capsys, "lint", "-c", catalog, script)
    assert code == 1 and out.startswith(f"{script}:1:")
    code, out, _ = run_cli(capsys, "lint", "-c", catalog, "--format", "sarif", script)
    run = json.loads(out)["runs"][0]
    (result,) = run["results"]
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"] == "str-without-length"
    for good in ('printf("%r\\n", buf(arg0, arg1))', 'printf("%s\\n", str(arg0, arg1))'):
        script.write_text(f"usdt:*:kv:get {{ {good}; }}\n")
        assert run_cli(capsys, "lint", "-c", catalog, script)[0] == 0, good

    # The reference's one-liner, run on a program passing "alphaXYZ" and
    # "ab\ncdXYZ" with a length of 5: five bytes each, one line a hit.
    require_sdt()
    bpftrace = require_bpftrace()
    if os.geteuid() != 0:
        pytest.skip("bpftrace needs root to attach probes")
    assert run_cli(capsys, "header", "-c", catalog, "-o", tmp_path / "kv_probes.h")[0] == 0
    assert run_cli(capsys, "docs", "-c", catalog, "-o", tmp_path / "probes.md")[0] == 0
    source = tmp_path / "kv.c"
    source.write_text(PROGRAM)
    program = compile_c([source], tmp_path / "kv", include_dirs=[tmp_path])
    line = next(l for l in (tmp_path / "probes.md").read_text().splitlines() if l.startswith("bpftrace -e"))
    script_text = line.split("-e ", 1)[1].strip("'").replace("BINARY", str(program))
    result = subprocess.run([bpftrace, "-e", script_text, "-c", str(program)], capture_output=True, text=True,
                            timeout=60)
    hits = [l for l in result.stdout.splitlines() if l.startswith("get ")]
    assert len(hits) == 2 and hits[0].startswith("get key=alpha keylen=5"), result.stdout + result.stderr
    assert "ab" in hits[1] and "cd keylen=5" in hits[1] and not any("XYZ" in h for h in hits)


# The protocol of tests/helpers/tracing.py: a key that is not NUL-terminated
# with its length, a uint8_t one (memcached's nkey) and a size_t one, which
# may be past max_len (100: bpftrace 0.17 reads it in two pieces) or past 2**63 (none).
TRACED = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "kv_probes.h"

int main(void)
{
	static char keys[2][16] = {"alphaXYZ", "ab\ncdXYZ"};
	static char long_key[400];
	char line[16];

	memset(long_key, 'x', sizeof(long_key));
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("READY\n");
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	printf("EXPECT get key=alpha keylen=5\n");
	KV_GET(keys[0], (uint8_t)5);
	printf("EXPECT get key=ab\\x0acd keylen=5\n");
	KV_GET(keys[1], (uint8_t)5);
	printf("EXPECT set key=alpha keylen=5\n");
	KV_SET(keys[0], (size_t)5);
	printf("EXPECT set key=%.100s keylen=300\n", long_key);
	KV_SET(long_key, (size_t)300);
	printf("EXPECT set key= keylen=%zu\n", (size_t)-1);
	KV_SET(keys[0], (size_t)-1);
	printf("DONE\n");
	return 0;
}
"""


def test_bpftrace_through_trace_and_bcc_print_exactly_the_length(tmp_path, capsys, catalog):
    from helpers.tracing import build_program, expected_lines, probegen_argv, require_bcc, run_traced, tracer_lines

    require_bpftrace()
    require_bcc()
    (tmp_path / "kv.c").write_text(TRACED)
    program = build_program(tmp_path / "kv.c", catalog, "kv_probes.h", tmp_path)
    assert run_cli(capsys, "bpftrace", "-c", catalog, "-o", tmp_path / "bt")[0] == 0
    assert run_cli(capsys, "bcc", "-c", catalog, "-o", tmp_path / "tool")[0] == 0
    traced, tracers = run_traced([program], {
        "trace": lambda pid: probegen_argv("trace", "-c", catalog, "-p", pid, tmp_path / "bt" / "kv.bt"),
        "bcc": lambda pid: [SYSTEM_PYTHON, tmp_path / "tool" / "kv.py", "-p", pid],
    })
    expected = expected_lines(traced)
    assert len(expected) == 5 and "x" * 100 + " " in expected[3]
    for name, tracer in tracers.items():
        assert tracer_lines(tracer.lines) == expected, (name, tracer.lines, tracer.stderr)
