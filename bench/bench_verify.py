#!/usr/bin/env python3
"""Whole-process time of `probegen verify` and `probegen list` on the JDK's
libjvm.so (531 probe sites), against `python -c pass` measured in the same
run with the same interpreter. Target: verify at most 2x the bare start.

verify runs two ways: on a catalog seen for the first time (no cache: the
YAML is parsed) and on one loaded before (its model comes from probegen's
cache). The binary is read in full every time. The floor rows show what
merely importing pyelftools costs.

Run by hand: .venv/bin/python bench/bench_verify.py [--rounds N] [BINARY PROVIDER]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import PYTHON, Command, compile_probegen, env_with, race  # noqa: E402

LIBJVM = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", nargs="?", default=LIBJVM)
    parser.add_argument("provider", nargs="?", default="hotspot_jni")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    if not Path(args.binary).exists():
        print(f"{args.binary} not found (install openjdk-17-jre-headless)", file=sys.stderr)
        return 2
    compile_probegen()
    with tempfile.TemporaryDirectory() as tmp:
        catalog = Path(tmp) / "imported.yaml"
        subprocess.run([PYTHON, "-m", "probegen", "import", args.binary, "--provider", args.provider,
                        "-o", str(catalog)], check=True)
        cached = env_with(XDG_CACHE_HOME=str(Path(tmp) / "cache"), PROBEGEN_NO_CACHE=None)
        verify = [PYTHON, "-m", "probegen", "verify", "-c", str(catalog), args.binary]
        if subprocess.run(verify, stdout=subprocess.DEVNULL, env=cached).returncode != 0:
            print("verify of the imported catalog did not pass", file=sys.stderr)
            return 1
        reference = Command("python -c pass", [PYTHON, "-c", "pass"])
        ours = [
            Command("verify, catalog seen before", verify, cached),
            Command("verify, first run (no cache)", verify, env_with(PROBEGEN_NO_CACHE="1")),
            Command("list", [PYTHON, "-m", "probegen", "list", args.binary], cached),
        ]
        others = [
            Command("floor: import elftools ELFFile", [PYTHON, "-c", "import elftools.elf.elffile"]),
            Command("readelf -n", ["readelf", "-n", args.binary]),
        ]
        race([reference, *ours, *others], rounds=args.rounds)
    base = reference.best_ms
    print(f"{Path(args.binary).name}, provider {args.provider}, best of {args.rounds} rounds")
    for command in (reference, *ours, *others):
        print(f"  {command.label:32} {command.best_ms:7.1f} ms  {command.best_ms / base:5.2f}x python -c pass")
    ratio = ours[0].best_ms / base
    print(f"verify / python -c pass = {ratio:.2f} (target <= 2.00): {'met' if ratio <= 2 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
