"""What users get from the built package: the sdist and the wheel are
built (python -m build: the wheel from the sdist), the wheel is installed
in a fresh venv, and what `probegen paths` prints there is used for real:
probegen.mk in the make example, the CMake module in a CMake build."""

from __future__ import annotations

import filecmp
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from helpers import REPO, SYSTEM_PYTHON, VENV_BIN, build_env, require, require_sdt, usdt_probes
from helpers.builds import copy_example

SHIPPED = {
    "make": REPO / "probegen" / "data" / "probegen.mk",
    "cmake": REPO / "probegen" / "data" / "cmake",
    "schema": REPO / "probegen" / "data" / "catalog.schema.json",
}
# Paths inside the package that a user's build or editor reads.
PACKAGE_DATA = [
    "probegen/data/probegen.mk",
    "probegen/data/cmake/probegenConfig.cmake",
    "probegen/data/cmake/probegenConfigVersion.cmake",
    "probegen/data/catalog.schema.json",
    "probegen/templates/usdt.h.j2",
]


def sh(command, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in command], cwd=cwd, env=env or build_env(),
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, command))} failed ({result.returncode}):\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """sdist and wheel, built as a release would be (isolated build env)."""
    pytest.importorskip("build", reason="python -m build not installed (pip install -e '.[test]')")
    setuptools = pytest.importorskip("setuptools", reason="setuptools not installed (pip install -e '.[test]')")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"setuptools {setuptools.__version__} is older than pyproject.toml's 77 (pip install -e '.[test]')")
    out = tmp_path_factory.mktemp("dist")
    # This venv's setuptools, not an isolated env fetched for each build: a
    # third of the time, and no network.
    sh([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, REPO], REPO)
    (sdist,) = out.glob("probegen-*.tar.gz")
    (wheel,) = out.glob("probegen-*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.fixture(scope="module")
def installed(dist, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed; its dependencies come from this
    venv's site-packages (no network), which has no probegen of its own to
    shadow the wheel's (this repository's is an editable install)."""
    venv = tmp_path_factory.mktemp("venv")
    sh([sys.executable, "-m", "venv", "--without-pip", venv], venv)  # ensurepip alone takes 15 s
    python = venv / "bin" / "python"
    sh([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", dist["wheel"]], venv)
    site = sh([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], venv).stdout.strip()
    deps = {Path(m.__file__).resolve().parent.parent for m in (__import__("jinja2"), __import__("yaml"),
                                                             __import__("elftools"), __import__("markupsafe"))}
    Path(site, "test-dependencies.pth").write_text("".join(f"{d}\n" for d in sorted(deps)))
    where = sh([python, "-c", "import probegen; print(probegen.__file__)"], venv).stdout.strip()
    assert Path(where).is_relative_to(venv), f"probegen imported from {where}, not the installed wheel"
    return venv


def installed_env(venv: Path) -> dict[str, str]:
    """The fresh venv's probegen first on PATH (cmake, ninja from this venv after it)."""
    env = build_env()
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    return env


def installed_paths(venv: Path) -> dict[str, Path]:
    out = sh([venv / "bin" / "probegen", "paths"], venv).stdout
    return {name: Path(path) for name, path in (line.split(": ", 1) for line in out.splitlines())}


def test_paths_of_the_installed_wheel_are_the_shipped_files(installed):
    paths = installed_paths(installed)
    assert set(paths) == set(SHIPPED)
    for name, path in paths.items():
        assert path.is_relative_to(installed), f"{name}: {path} is not in the installed package"
        assert path.exists(), f"{name}: {path} does not exist"
    assert filecmp.cmp(paths["make"], SHIPPED["make"], shallow=False)
    assert filecmp.cmp(paths["schema"], SHIPPED["schema"], shallow=False)
    cmake_files = sorted(p.name for p in SHIPPED["cmake"].glob("*.cmake"))
    assert sorted(p.name for p in paths["cmake"].glob("*.cmake")) == cmake_files
    for name in cmake_files:
        assert filecmp.cmp(paths["cmake"] / name, SHIPPED["cmake"] / name, shallow=False)
    for option, name in (("--make", "make"), ("--cmake-dir", "cmake"), ("--schema", "schema")):
        assert sh([installed / "bin" / "probegen", "paths", option], installed).stdout == f"{paths[name]}\n"
    schema = sh([installed / "bin" / "probegen", "schema"], installed).stdout
    assert schema == SHIPPED["schema"].read_text()


def test_wheel_and_sdist_contents(dist):
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = set(wheel.namelist())
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        assert "License-Expression: MIT" in wheel.read(metadata).decode()
    assert set(PACKAGE_DATA) <= names
    modules = {str(p.relative_to(REPO)) for p in (REPO / "probegen").rglob("*.py") if "__pycache__" not in p.parts}
    assert modules <= names, f"not in the wheel (add the package to pyproject.toml): {sorted(modules - names)}"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any("/tests/" in n or n.startswith("tests/") for n in names)

    with tarfile.open(dist["sdist"]) as sdist:
        root = sdist.getnames()[0].split("/")[0]
        members = {n[len(root) + 1:] for n in sdist.getnames() if n.startswith(root + "/")}
    assert not any("__pycache__" in m for m in members)
    expected = {"LICENSE", "README.md", "pyproject.toml", ".pre-commit-hooks.yaml", "templates/usdt.h.j2",
                "tests/conftest.py", "examples/cmake/CMakeLists.txt", "examples/make/Makefile", "probes.yaml",
                *(p for p in PACKAGE_DATA if not p.startswith("probegen/templates/"))}
    assert expected <= members, f"missing from the sdist: {sorted(expected - members)}"
    # Every tracked file the tests or the build could read (not the CI
    # wrapper or .gitignore) is in it.
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    if tracked.returncode == 0:
        files = {f for f in tracked.stdout.splitlines() if (REPO / f).exists()}
        wanted = {f for f in files if not f.startswith((".ci/", ".gitignore"))}
        assert wanted <= members, f"tracked but not in the sdist: {sorted(wanted - members)}"


@pytest.mark.slow
def test_tests_collect_from_the_unpacked_sdist(dist, tmp_path):
    with tarfile.open(dist["sdist"]) as sdist:
        sdist.extractall(tmp_path, filter="data")
    (root,) = tmp_path.iterdir()
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                            cwd=root, env=build_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = result.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ tests collected in [\d.]+s", summary), summary


def test_installed_make_fragment_builds_the_make_example(installed, tmp_path):
    require("make", "make")
    require("cc", "gcc")
    project = copy_example("make", tmp_path)
    env = installed_env(installed)
    # No PROBEGEN_MK: the Makefile asks the installed probegen where it is.
    database = sh(["make", "-pn"], project, env).stdout
    (makefiles,) = [line for line in database.splitlines() if line.startswith("MAKEFILE_LIST :=")]
    assert str(installed_paths(installed)["make"]) in makefiles
    sh(["make", "CONFIG_USDT=y" if _have_sdt() else "CONFIG_USDT=n"], project, env)
    verified = sh(["make", "CONFIG_USDT=y" if _have_sdt() else "CONFIG_USDT=n", "verify-probes"], project, env)
    if _have_sdt():
        assert f"{installed}/bin/probegen" not in verified.stdout  # $(PROBEGEN) is the bare name, found on PATH
        assert usdt_probes(project / "build" / "counter-demo") == {("counter", "demo_start"), ("counter", "demo_done")}


def test_installed_cmake_module_through_probegen_dir(installed, tmp_path):
    """find_package(probegen) with -Dprobegen_DIR=$(probegen paths --cmake-dir);
    the module then runs the probegen installed with it."""
    cmake = VENV_BIN / "cmake"
    if not cmake.exists() or not (VENV_BIN / "ninja").exists():
        pytest.skip(f"cmake or ninja from PyPI not in {VENV_BIN} (pip install -e '.[test]')")
    require("cc", "gcc")
    project = copy_example("cmake", tmp_path)
    lists = project / "CMakeLists.txt"
    text = lists.read_text()
    start = text.index("find_program(PROBEGEN_EXECUTABLE")
    end = text.index("\n", text.index("find_package(probegen"))
    lists.write_text(text[:start] + "find_package(probegen 0.1 CONFIG REQUIRED)" + text[end:])
    cmake_dir = installed_paths(installed)["cmake"]
    usdt = "ON" if _have_sdt() else "OFF"
    # This repository's probegen is on PATH (build_env); the module must
    # still pick the one installed beside it.
    sh([cmake, "-S", project, "-B", project / "build", "-G", "Ninja", f"-Dprobegen_DIR={cmake_dir}",
        f"-DCOUNTER_USDT={usdt}"], project)
    cache = (project / "build" / "CMakeCache.txt").read_text()
    assert f"PROBEGEN_EXECUTABLE:FILEPATH={installed}/bin/probegen\n" in cache
    sh([cmake, "--build", project / "build"], project)
    sh([VENV_BIN / "ctest", "--test-dir", project / "build", "--output-on-failure"], project)

    # A version this module is not.
    lists.write_text(lists.read_text().replace("find_package(probegen 0.1", "find_package(probegen 99.0"))
    result = subprocess.run([str(cmake), "-S", project, "-B", project / "build2", "-G", "Ninja",
                             f"-Dprobegen_DIR={cmake_dir}"], cwd=project, env=build_env(),
                            capture_output=True, text=True)
    assert result.returncode != 0 and "99.0" in result.stderr


def _have_sdt() -> bool:
    try:
        require_sdt()
    except pytest.skip.Exception:
        return False
    return True


def test_paths_and_schema_commands_in_this_checkout():
    probegen = VENV_BIN / "probegen"
    paths = installed_paths(VENV_BIN.parent)
    assert paths == {name: path.resolve() for name, path in SHIPPED.items()}
    assert sh([probegen, "schema"], REPO).stdout == SHIPPED["schema"].read_text()
    both = subprocess.run([probegen, "paths", "--make", "--schema"], capture_output=True, text=True)
    assert both.returncode == 2 and "not allowed with" in both.stderr and "Traceback" not in both.stderr


def _python_floor() -> tuple[int, int]:
    """pyproject's requires-python, which must be a plain '>=3.N'."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    match = re.fullmatch(r">=\s*3\.(\d+)", project["requires-python"])
    assert match, f"requires-python {project['requires-python']!r} is not '>=3.N'"
    return 3, int(match[1])


def test_python_floor_agrees_with_classifiers_and_this_interpreter():
    floor = _python_floor()
    classifiers = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["classifiers"]
    versions = [tuple(map(int, c.rsplit(" ", 1)[1].split("."))) for c in classifiers
                if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    assert versions and min(versions) == floor, f"classifiers name {versions}, requires-python {floor}"
    assert sys.version_info[:2] >= floor, f"the suite runs on {sys.version_info[:2]}, below the floor {floor}"


def _debian_12() -> bool:
    os_release = Path("/etc/os-release")
    fields = dict(line.split("=", 1) for line in os_release.read_text().splitlines() if "=" in line) \
        if os_release.exists() else {}
    return fields.get("ID") == "debian" and fields.get("VERSION_ID", "").strip('"') == "12"


def test_every_module_imports_and_runs_under_the_floor_python():
    """The floor is Debian 12's python3 (CI's venv is made from it): there it
    must be exactly the floor, and every probegen module imports and the CLI
    runs under it, with the dependencies of this venv (same minor version)."""
    floor = _python_floor()
    if not Path(SYSTEM_PYTHON).exists():
        pytest.skip(f"{SYSTEM_PYTHON} not found: the floor is checked with Debian 12's python3")
    version = subprocess.run([SYSTEM_PYTHON, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.split()
    system = tuple(map(int, version))
    if _debian_12():
        assert system == floor, f"Debian 12's python3 is {system}; requires-python says {floor}"
    elif system != floor:
        pytest.skip(f"{SYSTEM_PYTHON} is {system}, not the floor {floor} (the floor is Debian 12's python3)")
    if sys.version_info[:2] != floor:
        pytest.skip(f"this venv is Python {sys.version_info[:2]}: its dependencies cannot be lent to {floor}")
    runner = (
        "import importlib, pkgutil, site, sys\n"
        "site.addsitedir(sys.argv.pop(1))  # this venv: the dependencies and the editable probegen\n"
        "import probegen\n"
        "for module in pkgutil.walk_packages(probegen.__path__, 'probegen.'):\n"
        "    if not module.name.endswith('.__main__'):  # that one runs the CLI\n"
        "        importlib.import_module(module.name)\n"
        "from probegen.cli import main\n"
        "sys.exit(main(['paths']))\n"
    )
    result = subprocess.run([SYSTEM_PYTHON, "-s", "-c", runner, sysconfig.get_path("purelib")],
                            cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert str(REPO / "probegen") in result.stdout
