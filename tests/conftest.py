"""Every test, and every probegen process a test starts, uses a fresh cache
directory of its own, never the developer's ~/.cache/probegen."""

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory):
    saved = {k: os.environ.get(k) for k in ("XDG_CACHE_HOME", "PROBEGEN_NO_CACHE")}
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    os.environ.pop("PROBEGEN_NO_CACHE", None)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
