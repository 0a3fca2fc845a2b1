"""Fixtures shared by the whole suite (helper functions: tests/helpers/)."""

import os

import pytest
from hypothesis import settings

from helpers import run_cli, sdt_include_dir
from helpers.markers import inferred_marks

# Property tests replay by default (and in CI): derandomized and without an
# example database, so a run fails only on a case some commit brought in.
# tools/test.sh --explore draws fresh examples, ten times as many (see
# doc/internals.md); each failure it finds is kept as an @example.
settings.register_profile("replay", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "replay"))


def pytest_configure(config):
    config.addinivalue_line("markers", "tracer: needs root and a real tracer (bpftrace or BCC); inferred")
    config.addinivalue_line("markers", "compile: runs a compiler or a build tool; inferred")
    config.addinivalue_line("markers", "slow: takes seconds without a tracer; set by hand")


def pytest_collection_modifyitems(items):
    for item in items:
        function = getattr(item, "function", None)
        if function is not None:
            for mark in inferred_marks(item.path, function.__name__, item.fixturenames):
                item.add_marker(mark)
            if item.get_closest_marker("tracer"):
                # pytest-xdist (tools/test.sh: -n 2 --dist loadgroup) runs the tracer
                # tests one at a time on one worker: tracers attach system-wide.
                item.add_marker(pytest.mark.xdist_group("tracer"))


@pytest.fixture
def cli(capsys):
    """probegen's main() in this process: cli(*argv) -> (code, stdout, stderr)."""
    return lambda *argv: run_cli(capsys, *argv)


@pytest.fixture(scope="session")
def trixie():
    """Debian 13's root, its /proc, /sys and /dev bound for the session."""
    from helpers.trixie import mounted_root

    with mounted_root() as root:
        yield root


@pytest.fixture(scope="session")
def sdt_dir(tmp_path_factory):
    """A directory holding only sys/sdt.h: the real header for cross compilers."""
    return sdt_include_dir(tmp_path_factory.mktemp("sdt"))
