#!/usr/bin/env python3
"""Whole-process time of `probegen verify` and `probegen list`.

1. Scale: synthetic binaries with 1,000 / 5,000 / 20,000 probe sites
   (make_probe_binary.py: gcc, the real <sys/sdt.h>, a catalog that
   describes them: 2 sites a probe, as in Debian's PostgreSQL, libvirt and
   libruby, which have 1 to 2), each command against `readelf -n` on the same file in
   the same run. Target: verify and list (text and JSON) within 15x
   readelf -n at 20,000 notes, and time per note flat as notes grow.
2. The JDK's libjvm.so (531 probe sites, provider hotspot_jni imported
   from it) against `python -c pass`, for reference only (the former
   start-up target sat below what importing pyelftools costs: the floor row).

verify parses the catalog's YAML and reads the binary in full every time.

Run by hand: .venv/bin/python bench/bench_verify.py [--rounds N] [--notes N ...]
                 [--binary BINARY --provider PROVIDER]
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
SCALE_NOTES = (1_000, 5_000, 20_000)
SCALE_TARGET = 15.0  # x readelf -n, at the largest size
PROBEGEN = [PYTHON, "-m", "probegen"]


def bench_scale(tmp: Path, sizes, rounds: int) -> bool:
    import make_probe_binary

    print(f"1. synthetic binaries against readelf -n on the same file, best of {rounds} rounds:")
    print("   wall-clock ms and ratio (the target's measure), and CPU (user + system) ms and ratio")
    print(f"   {'notes':>6}  {'command':24} {'wall ms':>8} {'x readelf':>9}  {'cpu ms':>8} {'x readelf':>9}")
    met = True
    for notes in sizes:
        catalog, binary = make_probe_binary.build(tmp / f"notes{notes}", notes)
        reference = Command("readelf -n", ["readelf", "-n", str(binary)])
        ours = [
            # What verify spends before it reads the binary: start-up and
            # loading the catalog (here 1 probe for every 2 sites).
            Command("floor: load catalog", [PYTHON, "-c", "import gc, sys; gc.disable(); "
                    "from probegen.catalog import load_catalog; load_catalog(sys.argv[1])", str(catalog)]),
            # libyaml's parse and PyYAML's C composer, which load_catalog runs
            # first (nodes with their positions); yaml.load builds plain values
            # on top of that, in Python, and costs about twice as much.
            Command("floor: yaml.compose", [PYTHON, "-c", "import gc, sys, yaml; gc.disable(); "
                    "yaml.compose(open(sys.argv[1]).read(), Loader=yaml.CSafeLoader)", str(catalog)]),
            # The two reads verify cannot skip, with nothing checked or modelled.
            Command("floor: compose + notes", [PYTHON, "-c", "import gc, sys, yaml; gc.disable(); "
                    "from probegen.elf.deps import read_binaries; "
                    "yaml.compose(open(sys.argv[1]).read(), Loader=yaml.CSafeLoader); "
                    "read_binaries(sys.argv[2:])", str(catalog), str(binary)]),
            Command("list", PROBEGEN + ["list", str(binary)]),
            Command("list --format json", PROBEGEN + ["list", "--format", "json", str(binary)]),
            Command("verify", PROBEGEN + ["verify", "-c", str(catalog), str(binary)]),
            Command("verify --format json", PROBEGEN + ["verify", "--format", "json", "-c", str(catalog), str(binary)]),
        ]
        race([reference, *ours], rounds=rounds, warmup=1)
        for command in (reference, *ours):
            ratio = command.best_ms / reference.best_ms
            cpu_ratio = command.best_cpu_ms / reference.best_cpu_ms
            print(f"   {notes:>6}  {command.label:24} {command.best_ms:8.1f} {ratio:9.2f}  "
                  f"{command.best_cpu_ms:8.1f} {cpu_ratio:9.2f}")
            if notes == max(sizes) and not command.label.startswith("floor"):
                met &= ratio <= SCALE_TARGET
    print(f"   target at {max(sizes):,} notes: <= {SCALE_TARGET:g}x readelf -n: {'met' if met else 'MISSED'}")
    return met


def bench_libjvm(tmp: Path, binary: str, provider: str, rounds: int) -> None:
    if not Path(binary).exists():
        print(f"2. skipped: {binary} not found (install openjdk-17-jre-headless)")
        return
    catalog = tmp / "imported.yaml"
    subprocess.run(PROBEGEN + ["import", binary, "--provider", provider, "-o", str(catalog)], check=True)
    verify = PROBEGEN + ["verify", "-c", str(catalog), binary]
    if subprocess.run(verify, stdout=subprocess.DEVNULL).returncode != 0:
        print("2. skipped: verify of the imported catalog did not pass")
        return
    reference = Command("python -c pass", [PYTHON, "-c", "pass"])
    ours = [Command("verify", verify), Command("list", PROBEGEN + ["list", binary])]
    others = [
        Command("floor: import elftools ELFFile", [PYTHON, "-c", "import elftools.elf.elffile"]),
        Command("readelf -n", ["readelf", "-n", binary]),
    ]
    race([reference, *ours, *others], rounds=rounds)
    base = reference.best_ms
    print(f"2. {Path(binary).name}, provider {provider}, best of {rounds} rounds (for reference; no target)")
    for command in (reference, *ours, *others):
        print(f"   {command.label:32} {command.best_ms:7.1f} ms  {command.best_ms / base:5.2f}x python -c pass")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--notes", type=int, nargs="+", default=list(SCALE_NOTES))
    parser.add_argument("--binary", default=LIBJVM)
    parser.add_argument("--provider", default="hotspot_jni")
    parser.add_argument("--build-dir", type=Path, default=None,
                        help="keep the synthetic binaries here (reused when present)")
    args = parser.parse_args()
    compile_probegen()
    with tempfile.TemporaryDirectory(prefix="probegen-bench-") as tmp:
        tmp = Path(tmp)
        met = bench_scale(args.build_dir or tmp, args.notes, args.rounds)
        bench_libjvm(tmp, args.binary, args.provider, 4 * args.rounds)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
