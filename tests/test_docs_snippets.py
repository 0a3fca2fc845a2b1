"""The recipes in README.md and doc/*.md run as written.

A build recipe is shown as a whole example file, marked with the comment
`<!-- file: PATH -->` before its block; the example tests (test_meson,
test_make, test_cmake) build those files with USDT on and off, so the
copy in the docs must be the file, byte for byte. The catalogs the docs
show load, the pre-commit hooks they name exist, and their links to
other pages lead to files.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from probegen.catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent
# doc/usdt_probes.md is generated from probes.yaml (test_docs checks it).
GENERATED = {"usdt_probes.md"}
DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "doc").glob("*.md") if p.name not in GENERATED)]
FENCE = re.compile(r"^```(?P<lang>[\w+-]*)\n(?P<body>.*?)^```$", re.M | re.S)
FILE_MARK = re.compile(r"<!-- file: (?P<path>\S+) -->\n```[\w+-]*\n(?P<body>.*?)^```$", re.M | re.S)


def blocks(lang: str) -> list[tuple[Path, str]]:
    return [(doc, m["body"]) for doc in DOCS for m in FENCE.finditer(doc.read_text("utf-8")) if m["lang"] == lang]


MARKED = [(doc, m["path"], m["body"]) for doc in DOCS for m in FILE_MARK.finditer(doc.read_text("utf-8"))]


def test_build_recipes_are_shown_whole():
    shown = {path for _, path, _ in MARKED}
    assert {"examples/meson/meson.build", "examples/meson/meson_options.txt",
            "examples/make/Makefile", "examples/cmake/CMakeLists.txt"} <= shown
    # Every meson, make and cmake block is a whole, tested example file.
    for lang in ("meson", "make", "cmake"):
        for doc, body in blocks(lang):
            assert any(body == marked for _, _, marked in MARKED), f"{doc.name}: a {lang} block that is no example file"


@pytest.mark.parametrize("doc,path,body", MARKED, ids=[f"{d.name}:{p}" for d, p, _ in MARKED])
def test_marked_block_is_the_file(doc, path, body):
    assert body == (ROOT / path).read_text("utf-8"), f"{doc.name} shows an old copy of {path}"


def test_catalog_examples_load(tmp_path):
    catalogs = [body for _, body in blocks("yaml") if "\nprobes:" in body]
    assert catalogs, "the docs show a catalog"
    for index, body in enumerate(catalogs):
        path = tmp_path / f"catalog{index}.yaml"
        path.write_text(body)
        catalog = load_catalog(path)
        assert catalog.probes


def test_pre_commit_recipe_names_real_hooks():
    hooks = {hook["id"] for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    recipes = [yaml.safe_load(body) for _, body in blocks("yaml") if "hooks:" in body]
    assert recipes, "the docs show the pre-commit recipe"
    for recipe in recipes:
        named = {hook["id"] for repo in recipe for hook in repo["hooks"]}
        assert named and named <= hooks


LINK = re.compile(r"\]\((?P<target>[^)#\s]*)(?:#(?P<anchor>[^)\s]+))?\)")


def anchors(page: Path) -> set[str]:
    """The anchors GitHub makes of a page's headings."""
    text = FENCE.sub("", page.read_text("utf-8"))
    return {re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
            for title in re.findall(r"^#+ (.*)$", text, re.M)}


def test_pages_exist_and_links_lead_somewhere():
    pages = {p.name for p in DOCS[1:]}
    assert {"catalog.md", "build.md", "tracing.md", "verify-import.md", "structs.md", "security.md",
            "internals.md"} <= pages
    for doc in DOCS:
        for m in LINK.finditer(doc.read_text("utf-8")):
            if "://" in m["target"]:
                continue
            target = doc.parent / m["target"] if m["target"] else doc
            assert target.exists(), f"{doc.name} links to {m['target']}, which is missing"
            if m["anchor"]:
                assert m["anchor"] in anchors(target), f"{doc.name} links to {m['target']}#{m['anchor']}: no such heading"


def code_lines(text: str) -> list[str]:
    """What the docs show as code: inline spans, fenced and indented blocks
    (not the build files, which the example tests build)."""
    shown = [m["body"] for m in FENCE.finditer(text) if m["lang"] not in ("make", "meson", "cmake")]
    prose = FENCE.sub("", text)
    shown += re.findall(r"^(?: {4}|\t)(.*)$", prose, re.M)
    shown += re.findall(r"`([^`\n]+)`", prose)
    return [line for block in shown for line in block.splitlines()]


COMMAND = re.compile(r"(?:^|[\s$(])probegen (?P<command>[a-z]+)(?P<rest>[^|;&#\n]*)")


def test_commands_shown_are_real():
    """Every `probegen COMMAND --option` the docs show names a real command
    and options its --help lists."""
    from probegen.cli import COMMANDS

    used: dict[str, set[str]] = {}
    for doc in DOCS:
        for line in code_lines(doc.read_text("utf-8")):
            for m in COMMAND.finditer(line):
                assert m["command"] in COMMANDS, f"{doc.name}: `{line.strip()}`: no command {m['command']}"
                used.setdefault(m["command"], set()).update(re.findall(r"(?<![\w-])--[a-z][a-z-]*", m["rest"]))
    assert {"header", "verify", "list", "bpftrace"} <= used.keys()
    for command, options in used.items():
        result = subprocess.run([sys.executable, "-m", "probegen", command, "--help"],
                                capture_output=True, text=True, cwd=ROOT)
        assert result.returncode == 0, result.stderr
        known = set(re.findall(r"--[a-z][a-z-]*", result.stdout))
        assert options <= known, f"probegen {command}: the docs show {sorted(options - known)}"


def test_readme_commands_exist():
    """The README's two fresh-machine commands are there, and CI runs the test one."""
    readme = (ROOT / "README.md").read_text("utf-8")
    commands = re.findall(r"^ {4}(tools/\S+\.sh)$", readme, re.M)
    assert commands == ["tools/generate.sh", "tools/test.sh"]
    for command in commands:
        assert os.access(ROOT / command, os.X_OK), f"{command} is not an executable file"
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^exec tools/test\.sh$", ci, re.M), ".ci/run does not run the README's test command"


def test_every_test_file_is_in_the_feature_table():
    """doc/internals.md leads from each feature to its tests: no test file left out."""
    table = (ROOT / "doc" / "internals.md").read_text()
    assert [t.name for t in sorted((ROOT / "tests").glob("test_*.py")) if f"`{t.name}`" not in table] == []
