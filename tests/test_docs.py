"""`probegen docs`: the Markdown probe reference, and `--depfile`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from probegen.catalog import load_catalog
from probegen.generators.docs import md_cell, md_text, render_docs

REPO = Path(__file__).resolve().parent.parent
SPDK_CATALOG = REPO / "probes.yaml"


def probegen(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "probegen", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


def table_rows(text: str, heading: str) -> list[list[str]]:
    """Cells of the table under a '### heading', split on unescaped '|'."""
    section = text.split(f"\n### {heading}\n", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `arg")]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows]


def test_spdk_reference_lists_every_probe_with_script_argument_numbers():
    catalog = load_catalog(SPDK_CATALOG)
    text = render_docs(catalog)
    for probe in catalog.probes:
        assert f"\n### {probe.name}\n" in text
        rows = table_rows(text, probe.name)
        # SPDK's own arg0 first, then the catalog's arguments as arg1..
        assert [r[0] for r in rows] == [f"`arg{i}`" for i in range(len(probe.args) + 1)]
        for arg, row in zip(probe.args, rows[1:]):
            assert row[1] == f"`{arg.name}`"
            assert row[2] == f"`{arg.ctype.name}`"
    # Ticks probes carry the clock; the others a literal 0.
    assert table_rows(text, "nvmf_destroy_poll_group")[0][3] == "clock: spdk_get_ticks()"
    assert table_rows(text, "event_exec")[0][3] == "always 0"
    # Typedefs show as the catalog wrote them.
    assert table_rows(text, "event_exec")[1][2] == "`spdk_event_fn`"


def test_one_liner_uses_the_types_printf_conversions():
    text = render_docs(load_catalog(SPDK_CATALOG))
    # uint32_t flags marked hex, a string, a uint32_t nsid: formats from ctypes.
    assert ("bpftrace -e 'usdt:BINARY:spdk:spdk_nvmf_ns_add_host { printf(\"spdk_nvmf_ns_add_host "
            "subnqn=%s nsid=%u hostnqn=%s flags=0x%x\\n\", str(arg1), arg2, str(arg3), arg4); }'") in text
    # str(argN): bpftrace's default string size, which the text says; a longer str(p, n) would
    # print no more at BPFTRACE_STRLEN=64
    assert "first 63 characters at most" in text and "str(arg1, " not in text
    # Enums print as numbers: a one-liner has no name map.
    assert 'nvmf_tgt_state state=%d\\n", arg1); }' in text


def test_doc_text_cannot_break_tables_or_become_markup(tmp_path):
    catalog_path = tmp_path / "probes.yaml"
    catalog_path.write_text(
        "provider: demo\n"
        "header: {enable_macro: DEMO_USDT}\n"
        "probes:\n"
        "  - name: odd\n"
        "    group: g\n"
        "    doc: \"# a | b <script> *bold* _x_ [link](y) `code`\"\n"
        "    args:\n"
        "      - {name: v, type: int, doc: \"x | y\\nnext line\"}\n"
    )
    text = render_docs(load_catalog(catalog_path))
    rows = table_rows(text, "odd")
    assert rows == [["`arg0`", "`v`", "`int`", "x \\| y next line"]]
    assert "\n\\# a \\| b &lt;script&gt; \\*bold\\* \\_x\\_ \\[link\\](y) \\`code\\`\n" not in text  # prose: no '|' escape
    assert "\n\\# a | b &lt;script&gt; \\*bold\\* \\_x\\_ \\[link\\](y) \\`code\\`\n" in text
    assert "<script>" not in text
    # The summary table keeps three cells.
    summary = next(line for line in text.splitlines() if line.startswith("| [odd]"))
    assert len(re.split(r"(?<!\\)\|", summary)) == 5
    # Underscores inside words stay readable.
    assert md_text("spdk_nvmf_qpair") == "spdk_nvmf_qpair"
    assert md_cell("1. a|b") == "1\\. a\\|b"


def test_names_with_edge_underscores_are_not_emphasis(tmp_path):
    """A group or probe named _x_ is shown as written in headings and the summary, not in
    italics (and the heading's anchor is the name the summary links to)."""
    catalog_path = tmp_path / "probes.yaml"
    catalog_path.write_text("provider: demo\nprobes:\n  - {name: _p_, group: _g_, doc: d}\n")
    text = render_docs(load_catalog(catalog_path))
    assert "| [\\_p\\_](#_p_) | \\_g\\_ | d |\n" in text
    assert "\n## Group \\_g\\_\n" in text and "\n### \\_p\\_\n" in text


def test_generate_writes_docs_from_outputs_and_keeps_mtime(tmp_path):
    catalog_path = tmp_path / "probes.yaml"
    catalog_path.write_text(
        "provider: demo\n"
        "header: {enable_macro: DEMO_USDT}\n"
        "outputs: {docs: doc/probes.md}\n"
        "probes:\n"
        "  - {name: hit, group: g, doc: A hit., args: [{name: n, type: uint64_t}]}\n"
    )
    result = probegen("generate", "-c", catalog_path)
    assert result.returncode == 0, result.stderr
    doc = tmp_path / "doc" / "probes.md"
    first = doc.read_bytes()
    assert b"usdt:BINARY:demo:hit { printf(\"hit n=%lu\\n\", arg0); }" in first
    os.utime(doc, (1, 1))
    assert probegen("generate", "-c", catalog_path).returncode == 0
    assert doc.stat().st_mtime == 1 and doc.read_bytes() == first
    assert probegen("check", "-c", catalog_path).returncode == 0
    doc.write_text("edited by hand\n")
    assert probegen("check", "-c", catalog_path).returncode == 1


def test_docs_command_stdout_file_and_depfile(tmp_path):
    out = tmp_path / "ref dir" / "probes.md"
    result = probegen("docs", "-c", SPDK_CATALOG, "-o", out, "--depfile", tmp_path / "probes.md.d")
    assert result.returncode == 0, result.stderr
    stdout = probegen("docs", "-c", SPDK_CATALOG, "-o", "-")
    assert stdout.returncode == 0
    # Same text but the regeneration hint, which names the output.
    assert stdout.stdout == out.read_text().replace(" -o probes.md -->", " -->")
    depfile = (tmp_path / "probes.md.d").read_text()
    assert depfile.startswith(str(out).replace(" ", "\\ ") + ": \\\n")
    assert str(SPDK_CATALOG) in depfile and "docs.md.j2" in depfile


def test_header_depfile_names_the_output_as_given(tmp_path):
    result = probegen("header", "-c", SPDK_CATALOG, "-o", "usdt.h", "--depfile", "usdt.h.d", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "usdt.h.d").read_text().split(" \\\n  ")
    assert lines[0] == "usdt.h:"
    assert lines[1] == str(SPDK_CATALOG)
    assert Path(lines[2].strip()).name == "usdt.h.j2" and Path(lines[2].strip()).is_file()


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    result = probegen("docs", "-c", tmp_path / "missing.yaml")
    assert result.returncode == 2
    assert result.stderr.strip() == f"{tmp_path / 'missing.yaml'}: error: no such catalog file"
    result = probegen("docs", "-c", SPDK_CATALOG, "-o", "-", "--depfile", tmp_path / "d")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_declared_enums_are_listed_with_their_values():
    text = render_docs(load_catalog(SPDK_CATALOG))
    section = text.split("\n### enum spdk_nvme_transport_type\n", 1)[1]
    assert "| 256 | `SPDK_NVME_TRANSPORT_PCIE` |" in section
    assert "| 4097 | `SPDK_NVME_TRANSPORT_CUSTOM_FABRICS` |" in section
