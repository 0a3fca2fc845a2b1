"""The pre-commit hooks of .pre-commit-hooks.yaml, run the way pre-commit
runs them: the hook's entry, then its args, then (pass_filenames) the staged
files its `files`/`exclude` patterns select, from the repository's top
directory; a hook that selects no file does not run. With pre-commit
installed, `pre-commit try-repo` runs them for real too."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from helpers import REPO, VENV_BIN, build_env

HOOKS = {hook["id"]: hook for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}

CATALOG = """\
provider: shop
outputs:
  header: include/shop_probes.h
  bpftrace: scripts/bpf
  docs: doc/probes.md
probes:
  - name: order_placed
    group: orders
    doc: An order is placed.
    args:
      - {name: customer, type: const char *}
      - {name: cents, type: uint64_t}
"""
CLEAN_SCRIPT = 'usdt:./shop:shop:order_placed { printf("%s %lu\\n", str(arg0), arg1); }\n'
BROKEN_SCRIPT = 'usdt:./shop:shop:order_lost { printf("%d\\n", arg0); }\n'


def selected(hook: dict, staged: list[str]) -> list[str]:
    """The staged files pre-commit would hand the hook (types: only regular
    files here, which every hook accepts)."""
    files = re.compile(hook.get("files", ""))
    exclude = re.compile(hook.get("exclude", "^$"))
    return [f for f in staged if files.search(f) and not exclude.search(f)]


def run_hook(hook_id: str, repo: Path, staged: list[str], args: list[str] | None = None) -> subprocess.CompletedProcess | None:
    """None when pre-commit would skip the hook (no file selected). ``args``
    replace the hook's own, as a project's configuration does."""
    hook = HOOKS[hook_id]
    assert hook["language"] == "python"  # pre-commit installs this package; its probegen is the venv's
    files = selected(hook, staged)
    if not files and not hook.get("always_run", False):
        return None
    command = [*shlex.split(hook["entry"]), *(hook.get("args", []) if args is None else args)]
    if hook.get("pass_filenames", True):
        command += files
    return subprocess.run(command, cwd=repo, env=build_env(), capture_output=True, text=True)


@pytest.fixture
def repo(tmp_path) -> Path:
    (tmp_path / "probes.yaml").write_text(CATALOG)
    (tmp_path / "tools").mkdir()
    subprocess.run([VENV_BIN / "probegen", "generate"], cwd=tmp_path, check=True, capture_output=True)
    return tmp_path


def test_hooks_are_the_documented_ones():
    assert set(HOOKS) == {"probegen-check", "probegen-lint"}
    for hook in HOOKS.values():
        assert {"id", "name", "entry", "language"} <= set(hook)
    assert HOOKS["probegen-check"]["pass_filenames"] is False
    assert selected(HOOKS["probegen-lint"], ["a.bt", "probes.yaml", "src/x.c", "tools/b.bt"]) == ["a.bt", "tools/b.bt"]


def test_check_hook_passes_when_up_to_date_and_fails_when_stale(repo):
    result = run_hook("probegen-check", repo, ["probes.yaml", "src/shop.c"])
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stdout

    # The catalog edited without regenerating: the commit is refused.
    catalog = repo / "probes.yaml"
    catalog.write_text(catalog.read_text().replace("An order is placed.", "An order is placed and paid."))
    result = run_hook("probegen-check", repo, ["probes.yaml"])
    assert result.returncode == 1
    assert "include/shop_probes.h: stale" in result.stderr

    # A generated file edited by hand: the same.
    subprocess.run([VENV_BIN / "probegen", "generate"], cwd=repo, check=True, capture_output=True)
    assert run_hook("probegen-check", repo, ["doc/probes.md"]).returncode == 0
    with open(repo / "doc" / "probes.md", "a") as doc:
        doc.write("hand-written line\n")
    result = run_hook("probegen-check", repo, ["doc/probes.md"])
    assert result.returncode == 1 and "doc/probes.md: stale" in result.stderr


def test_check_hook_with_a_catalog_elsewhere(repo):
    shutil.move(repo / "probes.yaml", repo / "tools" / "probes.yaml")
    assert run_hook("probegen-check", repo, ["x"]).returncode == 2  # no ./probes.yaml: a usage error
    # Outputs are relative to the catalog: regenerate there, then check with args.
    subprocess.run([VENV_BIN / "probegen", "generate", "--catalog", "tools/probes.yaml"], cwd=repo, check=True,
                   capture_output=True)
    result = run_hook("probegen-check", repo, ["x"], args=["--catalog", "tools/probes.yaml"])
    assert result.returncode == 0, result.stderr


def test_lint_hook_gets_only_bpftrace_scripts(repo):
    (repo / "tools" / "orders.bt").write_text(CLEAN_SCRIPT)
    staged = ["probes.yaml", "tools/orders.bt", "scripts/bpf/all.bt", "README.md"]
    result = run_hook("probegen-lint", repo, staged)
    assert result.returncode == 0, result.stdout + result.stderr
    # No script staged: pre-commit does not run the hook at all.
    assert run_hook("probegen-lint", repo, ["probes.yaml", "README.md"]) is None


def test_lint_hook_fails_on_a_broken_script(repo):
    (repo / "tools" / "orders.bt").write_text(CLEAN_SCRIPT)
    (repo / "tools" / "lost.bt").write_text(BROKEN_SCRIPT)
    result = run_hook("probegen-lint", repo, ["tools/orders.bt", "tools/lost.bt"])
    assert result.returncode == 1
    assert "tools/lost.bt:1:" in result.stdout and "order_lost" in result.stdout
    assert "tools/orders.bt" not in result.stdout.replace("tools/orders.bt: ok", "")

    # A script that does not parse, and a catalog passed through args.
    (repo / "tools" / "lost.bt").write_text("usdt:./shop:shop:order_placed { printf(\n")
    result = run_hook("probegen-lint", repo, ["tools/lost.bt"], args=["--catalog", "probes.yaml", "--"])
    assert result.returncode == 2 and "tools/lost.bt:" in result.stderr + result.stdout


@pytest.mark.parametrize("args", [None, ["--catalog", "probes.yaml", "--format", "json", "--"]])
def test_lint_hook_takes_no_staged_name_for_an_option(repo, args):
    """A staged script named like an option is linted: it neither escapes
    the lint nor names where the report is written."""
    (repo / "scripts" / "good.bt").write_text(CLEAN_SCRIPT)
    (repo / "-oscripts" / "good.bt").parent.mkdir()
    (repo / "-oscripts" / "good.bt").write_text(BROKEN_SCRIPT)
    (repo / "-oscripts.bt").write_text(BROKEN_SCRIPT)
    result = run_hook("probegen-lint", repo, ["-oscripts.bt", "-oscripts/good.bt"], args=args)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "order_lost" in result.stdout and "-oscripts/good.bt" in result.stdout
    assert (repo / "scripts" / "good.bt").read_text() == CLEAN_SCRIPT


@pytest.mark.slow
def test_hooks_through_pre_commit_try_repo(repo, tmp_path_factory):
    """The real thing, when pre-commit and git are installed: try-repo builds
    the hook's Python environment from this repository and runs the hooks
    in a git repository."""
    pre_commit = VENV_BIN / "pre-commit"
    if not pre_commit.exists():
        pytest.skip(f"pre-commit not in {VENV_BIN} (pip install pre-commit)")
    git = shutil.which("git")
    if git is None:
        pytest.skip("git not found (install git)")
    if subprocess.run([git, "-C", REPO, "rev-parse"], capture_output=True).returncode != 0:
        pytest.skip(f"{REPO} is not a git checkout (try-repo needs one)")
    env = build_env()
    env["PRE_COMMIT_HOME"] = str(tmp_path_factory.mktemp("pre-commit-home"))
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    (repo / "tools" / "orders.bt").write_text(CLEAN_SCRIPT)
    # One run of both hooks (try-repo builds the hook environment each time,
    # ~25 s): the catalog is current, a staged script is broken.
    (repo / "tools" / "lost.bt").write_text(BROKEN_SCRIPT)
    for command in (["init", "-q"], ["add", "-A"]):
        subprocess.run([git, *command], cwd=repo, env=env, check=True)
    result = subprocess.run([pre_commit, "try-repo", REPO, "--all-files"], cwd=repo, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(r"^probegen check .*Passed$", result.stdout, re.M), result.stdout
    assert re.search(r"^probegen lint .*Failed$", result.stdout, re.M), result.stdout
    assert "tools/lost.bt:1:" in result.stdout and "tools/orders.bt" not in result.stdout
