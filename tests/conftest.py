"""Every test, and every probegen process a test starts, uses a fresh cache
directory of its own, never the developer's ~/.cache/probegen."""

import pytest


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        patch.delenv("PROBEGEN_NO_CACHE", raising=False)
        yield
