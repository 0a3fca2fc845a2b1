"""Everything generated from a catalog, checked with the real tools for code
that the catalog's text might have injected.

Payloads in hostile catalogs name the marker MARKER; an output is safe when
the marker survives only where text is inert:

- C: not in the preprocessed translation unit (comments are gone there),
  and the header compiles (gcc C11, g++ C++17, both with trigraphs; -Wall
  -Wextra -Werror; probes on and off) with every probe macro called;
- bpftrace: not in the program bpftrace 0.17 parses (``-d`` prints its AST
  and code: comments are gone there), and the script loads;
- Python: compiles from its bytes (so an encoding declaration would take
  effect) and runs with --help under /usr/bin/python3 without creating the
  marker file or printing the marker;
- Markdown: exactly one HTML comment, ending where the template ends it.
"""

from __future__ import annotations

import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from probegen.catalog import Catalog
from probegen.catalog.ctype import C_KEYWORDS, CTypeError, Kind, parse_ctype
from probegen.generators import bcc, bpftrace, docs
from probegen.generators.header import render_header
from probegen.files.output import write_all
from helpers import SYSTEM_PYTHON, WARNINGS, require, require_sdt

MARKER = "PGINJECT"
# What payloads do when they run: create this file in the working directory, or print MARKER.
PYTHON_PAYLOAD = f"__import__('pathlib').Path('{MARKER}').touch(); print('{MARKER}')"
BPFTRACE_PAYLOAD = f'BEGIN {{ printf("{MARKER}\\n"); }}'
C_PAYLOAD = f"int {MARKER}_c = 1;"


def write_catalog(directory: Path, file_name: str, data: dict) -> Path:
    """The catalog as YAML (PyYAML quotes and escapes every string), under
    a file name that may hold anything but '/' and NUL."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file_name
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=False, width=1 << 16), "utf-8")
    return path


@dataclass
class Outputs:
    """The files generated from one catalog, in ``directory``."""

    catalog: Catalog
    directory: Path
    header: Path
    scripts: list[Path]
    tools: list[Path]
    docs: Path
    call_sites: dict = field(default_factory=dict)  # (enabled, cxx) -> source file


def generate(catalog: Catalog, directory: Path) -> Outputs:
    """Every output of the catalog, written under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    header = directory / "probes.h"
    header.write_bytes(render_header(catalog).encode("utf-8"))
    scripts = [path for _, path in write_all(bpftrace.render_files(catalog, directory / "bpf"))]
    tools = [path for _, path in write_all(bcc.render_files(catalog, directory / "bcc"))]
    doc = directory / "probes.md"
    write_all(docs.render_files(catalog, doc))
    outputs = Outputs(catalog, directory, header, sorted(scripts), sorted(tools), doc)
    # An accepted include path is a relative path of plain names, found
    # beside the header like a project's own header: give it one.
    for include in catalog.header.includes:
        stub = directory / include
        if include not in ("stdint.h", "stddef.h", "sys/types.h") and not stub.exists():
            stub.parent.mkdir(parents=True, exist_ok=True)
            stub.write_text("/* stub for an include the catalog names */\n")
    for enabled in (True, False):
        for cxx in (False, True):
            source = directory / f"site_{'on' if enabled else 'off'}.{'cc' if cxx else 'c'}"
            source.write_text(call_site(catalog, enabled))
            outputs.call_sites[enabled, cxx] = source
    return outputs


_TYPE_WORDS = {"uint64_t", "uint32_t", "int", "long", "unsigned", "char", "short", "signed", "const", "void"}


def _zero(ctype) -> str:
    if ctype.kind is Kind.ENUM:
        return f"(enum {ctype.enum_name})0"
    return f"({ctype.spelling})0"


def _declared_elsewhere(spellings: str) -> set[str]:
    """Type names in the spellings that only an included header can declare."""
    tagged = set(re.findall(r"\b(?:struct|union|enum) ([A-Za-z_]\w*)", spellings))
    names = set()
    for name in set(re.findall(r"[A-Za-z_]\w*", spellings)) - tagged - C_KEYWORDS:
        try:
            parse_ctype(name)
        except CTypeError:
            names.add(name)
    return names


def call_site(catalog: Catalog, enabled: bool) -> str:
    """A program calling every probe macro (and _ENABLED()) of the header."""
    header = catalog.header
    lines = []
    if enabled:
        lines.append(f"#define {header.enable_macro} 1")
    # What a real program declares before probing: the structs and enums
    # the argument types name.
    spellings = " ".join(a.ctype.spelling for p in catalog.probes for a in p.args)
    for tag, name in sorted(set(re.findall(r"\b(struct|union) ([A-Za-z_]\w*)", spellings))):
        lines.append(f"{tag} {name};")
    for name in sorted(set(re.findall(r"\benum ([A-Za-z_]\w*)", spellings))):
        lines.append(f"enum {name} {{ {name}_zero }};")
    # The catalog may point at types its includes declare ('foo_t *', a
    # callback's 'foo_t' parameter): a real program's headers declare them.
    for name in sorted(_declared_elsewhere(spellings)):
        lines.append(f"typedef int {name};")
    if header.clock:
        lines.append("#include <stdint.h>")
        for called in sorted(set(re.findall(r"([A-Za-z_]\w*)\s*\(", header.clock))):
            lines.append(f"static inline uint64_t {called}(void) {{ return 1; }}")
        variables = set(re.findall(r"[A-Za-z_]\w*", re.sub(r"[A-Za-z_]\w*\s*\(", "", header.clock)))
        for name in sorted(variables - _TYPE_WORDS):
            lines.append(f"uint64_t {name} = 1;")
    lines.append('#include "probes.h"')
    lines.append("int fire(int);")
    lines.append("int fire(int n) {")
    lines.append("\tint hits = 0;")
    for probe in catalog.probes:
        macro = f"{header.typed_prefix}_{probe.name.upper()}"
        lines.append(f"\tif ({macro}_ENABLED()) hits++;")
        lines.append(f"\t{macro}({', '.join(_zero(a.ctype) for a in probe.args)});")
    lines.append("\treturn hits + n;")
    lines.append("}")
    lines.append("int main(void) { return fire(0) < 0; }")
    return "\n".join(lines) + "\n"


def _compile_command(cxx: bool, sources, extra=()) -> list[str]:
    if cxx:
        return ["g++", *WARNINGS, "-std=c++17", "-trigraphs", "-x", "c++", *extra, *map(str, sources)]
    return ["gcc", *WARNINGS, "-std=c11", "-trigraphs", *extra, *map(str, sources)]


def check_c(all_outputs: list[Outputs]) -> None:
    """Each header compiles in C and C++, probes on and off, every macro
    called; no marker reaches the preprocessed code."""
    require("gcc", "gcc")
    require("g++", "g++")
    require_sdt()
    for (enabled, cxx) in [(True, False), (False, False), (True, True), (False, True)]:
        sources = [o.call_sites[enabled, cxx] for o in all_outputs]
        # One compiler run checks every catalog's translation unit.
        result = subprocess.run(_compile_command(cxx, sources, ["-fsyntax-only"]), capture_output=True, text=True)
        assert result.returncode == 0, f"compile failed ({'C++' if cxx else 'C'}, probes {'on' if enabled else 'off'}):\n{result.stderr[-4000:]}"
        for source in sources:
            expanded = subprocess.run(_compile_command(cxx, [source], ["-E"]), capture_output=True, text=True)
            assert expanded.returncode == 0, expanded.stderr[-2000:]
            assert MARKER not in expanded.stdout, f"{source}: catalog text reached C code"


def build_site(outputs: Outputs) -> Path:
    """The call site program with probes on: what scripts attach to."""
    binary = outputs.directory / "site"
    if not binary.exists():
        result = subprocess.run(_compile_command(False, [outputs.call_sites[True, False]], ["-o", str(binary)]),
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-2000:]
    return binary


def runnable_script(script: Path, binary: Path) -> Path:
    """The script with its attach points naming the binary, as `probegen
    trace` does (bpftrace resolves the generated ``usdt:*:`` only with -p)."""
    runnable = script.with_name("run_" + script.name)
    path = str(binary).encode()
    text = re.sub(rb"(?m)^usdt:\*:", lambda _: b"usdt:" + path + b":", script.read_bytes())
    runnable.write_bytes(text.replace(b"__EXE__", path))
    return runnable


def check_bpftrace(all_outputs: list[Outputs]) -> None:
    """Each script parses, passes bpftrace 0.17's semantic checks and
    compiles (``bpftrace -d``) against a binary built from the header; no
    marker in the program bpftrace builds."""
    require("bpftrace", "bpftrace")
    jobs = []
    for outputs in all_outputs:
        binary = build_site(outputs)
        for script in outputs.scripts:
            if script.name in ("all.bt", "counts.bt"):  # group scripts are parts of all.bt
                jobs.append(runnable_script(script, binary))

    def dry_run(script: Path):
        return script, subprocess.run(["bpftrace", "-d", str(script)], capture_output=True, text=True,
                                      errors="replace", timeout=60)

    with ThreadPoolExecutor(max_workers=2) as pool:
        for script, result in pool.map(dry_run, jobs):
            assert result.returncode == 0, f"{script}: bpftrace refused it:\n{result.stderr[-3000:]}"
            assert MARKER not in result.stdout, f"{script}: catalog text reached the bpftrace program"


def check_python(all_outputs: list[Outputs], directory: Path) -> None:
    """Each BCC tool compiles from its bytes and runs --help in the system
    Python (one process for all) without running a payload."""
    if not Path(SYSTEM_PYTHON).exists():
        pytest.skip(f"{SYSTEM_PYTHON} not found")
    tools = [t for o in all_outputs for t in o.tools]
    for tool in tools:
        compile(tool.read_bytes(), str(tool), "exec")  # raises SyntaxError
    runner = (
        "import runpy, sys\n"
        "for path in sys.argv[1:]:\n"
        "    sys.argv = [path, '--help']\n"
        "    try:\n"
        "        runpy.run_path(path, run_name='__main__')\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code == 0, (path, exc.code)\n"
        "print('ALL-RAN')\n"
    )
    directory.mkdir(parents=True, exist_ok=True)
    result = subprocess.run([SYSTEM_PYTHON, "-c", runner, *map(str, tools)], capture_output=True, text=True,
                            cwd=directory, errors="replace", timeout=120)
    assert result.returncode == 0 and "ALL-RAN" in result.stdout, result.stderr[-3000:]
    assert MARKER not in result.stdout and MARKER not in result.stderr, "a payload ran in a BCC tool"
    assert not (directory / MARKER).exists(), "a payload ran in a BCC tool"


def check_docs(all_outputs: list[Outputs]) -> None:
    """The Markdown has the two HTML comments its template writes (the
    marker line, then where it was made from), each closed on its own line."""
    for outputs in all_outputs:
        text = outputs.docs.read_text("utf-8")
        # Code spans are literal text (the file name is shown in one).
        text = re.sub(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)", "", text)
        assert text.count("<!--") == 2 and text.count("-->") == 2, outputs.docs
        lines = text.splitlines()
        assert lines[0].endswith("-->") and lines[1].endswith("-->"), outputs.docs


def check_all(all_outputs: list[Outputs], directory: Path) -> None:
    if not all_outputs:
        return
    check_docs(all_outputs)
    check_python(all_outputs, directory)
    check_c(all_outputs)
    check_bpftrace(all_outputs)
