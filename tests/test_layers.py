"""probegen's layering, from its imports (even those inside functions):
the readers of binaries (probegen.dwarf, probegen.elf) know no catalog and
write nothing, and every package imports only the layers below it."""

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


# Which package may import which (doc/internals.md): only ranks below its
# own; the plumbing (rank 0) may use itself.
RANK = {
    "__init__": 0, "probegen": 0, "errors": 0, "files": 0, "data": 0, "templates": 0,
    "bpftrace": 1, "catalog": 2,
    "elf": 3, "dwarf": 4,
    "generators": 5,
    "checks": 6, "runtime": 6, "importers": 6, "reports": 6,
    "commands": 7, "cli": 8, "__main__": 9,
}
# The BCC generator copies the runtime's source into each tool it writes (the
# tool runs under the system's python3, where probegen may be absent).
ALLOWED = {("generators/bcc.py", "probegen.runtime.bcc")}


def _package_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "probegen":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in RANK else "probegen"


def test_every_package_imports_only_the_layers_below_it():
    broken = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        own = relative.parts[0] if len(relative.parts) > 1 else relative.stem
        assert own in RANK, f"{relative}: a package the layering does not know: add it to RANK"
        for name in sorted(imported(path)):
            other = _package_of(name)
            if other is None or other == own or (relative.as_posix(), name) in ALLOWED:
                continue
            if not (RANK[other] < RANK[own] or RANK[other] == RANK[own] == 0):
                broken.append(f"{relative} imports {name}")
    assert not broken, broken
