"""The readers of binaries (probegen.dwarf, probegen.elf) know no catalog
and write nothing: they import neither the model, nor a generator, nor
the templates or jinja2, not even inside a function."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "probegen"
READERS = ("dwarf", "elf")
FORBIDDEN = ("probegen.catalog", "probegen.generators", "probegen.templates", "templates", "jinja2")


def imported(path: Path) -> set[str]:
    """Every module the file imports, relative imports made absolute."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module) if p)
            names.add(module)
            if module == "probegen":  # from probegen import catalog
                names.update(f"probegen.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("reader", READERS)
def test_readers_import_no_catalog_generator_or_template(reader):
    files = sorted((PACKAGE / reader).rglob("*.py"))
    assert files
    broken = {
        f"{path.relative_to(PACKAGE.parent)} imports {name}"
        for path in files for name in imported(path)
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
    }
    assert not broken, sorted(broken)
