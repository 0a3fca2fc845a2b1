#!/usr/bin/env python3
"""Whole-process time of `probegen verify` and `probegen list` on the JDK's
libjvm.so (531 probe sites), against `python -c pass` measured in the same
run with the same interpreter. Target: verify at most 2x the bare start.

Run by hand: .venv/bin/python bench/bench_verify.py [--runs N] [BINARY PROVIDER]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIBJVM = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"


def median_ms(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", nargs="?", default=LIBJVM)
    parser.add_argument("provider", nargs="?", default="hotspot_jni")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    if not Path(args.binary).exists():
        print(f"{args.binary} not found (install openjdk-17-jre-headless)", file=sys.stderr)
        return 2
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        catalog = Path(tmp) / "imported.yaml"
        subprocess.run([python, "-m", "probegen", "import", args.binary, "--provider", args.provider,
                        "-o", str(catalog)], check=True)
        verify = [python, "-m", "probegen", "verify", "-c", str(catalog), args.binary]
        if subprocess.run(verify, stdout=subprocess.DEVNULL).returncode != 0:
            print("verify of the imported catalog did not pass", file=sys.stderr)
            return 1
        for command in (verify, [python, "-c", "pass"]):  # warm the page cache and .pyc files
            median_ms(command, 3)
        rows = [
            ("python -c pass", median_ms([python, "-c", "pass"], args.runs)),
            ("probegen verify", median_ms(verify, args.runs)),
            ("probegen list", median_ms([python, "-m", "probegen", "list", args.binary], args.runs)),
            ("readelf -n", median_ms(["readelf", "-n", args.binary], args.runs)),
        ]
    base = rows[0][1]
    print(f"{Path(args.binary).name}, provider {args.provider}, median of {args.runs} runs")
    for name, ms in rows:
        print(f"  {name:16} {ms:7.1f} ms  {ms / base:5.2f}x python -c pass")
    ratio = rows[1][1] / base
    print(f"verify / python -c pass = {ratio:.2f} (target <= 2.00): {'OK' if ratio <= 2 else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
