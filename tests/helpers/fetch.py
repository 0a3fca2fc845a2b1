"""What the tests read from the network, fetched once per machine by
``tools/setup.sh --test`` (``python -m helpers.fetch``) into
~/.cache/probegen-tests: real Debian binaries with USDT notes, and the SARIF
2.1.0 schema. Tests never download; without these they skip, saying so."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

SARIF_PACKAGE = "sarif-om==1.0.4"  # its sdist ships the schema
SARIF_MEMBER = "sarif-2.1.0-rtm.4.json"
SARIF_CACHE = Path.home() / ".cache" / "probegen-tests" / "sarif-schema"


def fetch_sarif() -> None:
    SARIF_CACHE.mkdir(parents=True, exist_ok=True)
    if not list(SARIF_CACHE.glob("sarif_om-*.tar.gz")):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--quiet",
                        "--dest", str(SARIF_CACHE), SARIF_PACKAGE], check=True, timeout=300)


def sarif_schema() -> dict | None:
    found = sorted(SARIF_CACHE.glob("sarif_om-*.tar.gz"))
    if not found:
        return None
    with tarfile.open(found[-1]) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("/" + SARIF_MEMBER))
        return json.load(archive.extractfile(member))


if __name__ == "__main__":
    from helpers.debian import fetch_all

    fetch_sarif()
    fetch_all(download=True)
