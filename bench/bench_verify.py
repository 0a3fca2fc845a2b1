#!/usr/bin/env python3
"""Whole-process time of `probegen verify` and `probegen list` on the JDK's
libjvm.so (531 probe sites), against `python -c pass` measured in the same
run with the same interpreter. For reference only: the former start-up
target (verify within 2x the bare start) is retired, as it sat below what
importing pyelftools costs (the floor row).

verify parses the catalog's YAML and reads the binary in full every time.

Run by hand: .venv/bin/python bench/bench_verify.py [--rounds N] [BINARY PROVIDER]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import PYTHON, Command, compile_probegen, race  # noqa: E402

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
        verify = [PYTHON, "-m", "probegen", "verify", "-c", str(catalog), args.binary]
        if subprocess.run(verify, stdout=subprocess.DEVNULL).returncode != 0:
            print("verify of the imported catalog did not pass", file=sys.stderr)
            return 1
        reference = Command("python -c pass", [PYTHON, "-c", "pass"])
        ours = [
            Command("verify", verify),
            Command("list", [PYTHON, "-m", "probegen", "list", args.binary]),
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
