#!/usr/bin/env python3
"""Cost per traced event of bpftrace scripts, attached live.

bench/c/nvmf_loop.c, built against the header probegen generates from
probes.yaml, fires eight of SPDK's nvmf probes in a loop and times the loop
with its own clock. It runs untraced, then under `probegen trace` with:

- generated: the nvmf group script probegen generates (a line per hit),
  which probegen trace makes again for the process (on bpftrace 0.17: its
  strings read whole, in pieces)
- as written: the same script run as written (trace given no catalog), as
  bpftrace -p or SPDK's bpftrace.sh run it (on 0.17: one str() of 63
  characters a string, as the hand-written one reads them)
- spans: the span script (start times in maps, histograms at the ends)
- hand-written: bench/bpf/nvmf_handwritten.bt, a line per hit written by
  hand in the style of SPDK's own scripts/bpf/nvmf.bt
- printf floor: bench/bpf/printf_floor.bt, one printf a hit of its time and
  probe name only: the least a line per hit costs (bpftrace sends each
  printf to its perf buffer, most of a hit's cost)

the first two made for the eight probes the loop fires, as the third is.

Cost per event = (loop time traced - loop time untraced) / hits; each
configuration runs once per round, in turns, and keeps its median. Target
(issue 24): generated at most 0.8x hand-written; the floor's ratio shows how
far below hand-written any line per hit can go.

--bcc: SPDK's BCC tool with --hist instead (the four spans the loop runs),
as generated now (histograms kept in the kernel) against the tool of commit
BCC_BEFORE (one perf event per finished span, summed in Python), read from
git. Target: at most a third of the cost per span.

Needs root and bpftrace (BCC for --bcc). Run: sudo .venv/bin/python bench/bench_trace_overhead.py
                               [--iterations N] [--rounds N] [--bcc]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from probegen.catalog import load_catalog  # noqa: E402
from probegen.generators import bpftrace, spans  # noqa: E402
from probegen.generators.header import render_header  # noqa: E402

TARGET = 0.8  # generated / hand-written
BCC_TARGET = 1 / 3  # in-kernel histograms / an event per span
BCC_BEFORE = "ab2b50a"  # the last commit whose BCC tool sent an event per span
STUBS = REPO / "tests" / "c" / "stubs"
CPUS = sorted(os.sched_getaffinity(0))
PROGRAM_CPU = {CPUS[0]}
TRACER_CPUS = set(CPUS[1:]) or PROGRAM_CPU
# What bench/c/nvmf_loop.c fires: the probes of four of probes.yaml's spans.
FIRED = ("nvmf_subsystem_change_state", "nvmf_subsystem_change_state_done", "nvmf_pg_change_state",
         "nvmf_pg_change_state_done", "nvmf_poll_group_add_qpair", "nvmf_poll_group_remove_qpair",
         "nvmf_ctrlr_create", "nvmf_ctrlr_destruct")


def build(tmp: Path) -> Path:
    catalog = load_catalog(REPO / "probes.yaml")
    header = tmp / "include" / "spdk_internal" / "usdt.h"
    header.parent.mkdir(parents=True)
    header.write_text(render_header(catalog))
    config = tmp / "config" / "spdk"
    config.mkdir(parents=True)
    (config / "config.h").write_text("#define SPDK_CONFIG_USDT 1\n")
    binary = tmp / "nvmf_loop"
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", f"-I{tmp / 'include'}", f"-I{tmp / 'config'}", f"-I{STUBS}",
                    str(REPO / "bench" / "c" / "nvmf_loop.c"), "-o", str(binary)], check=True)
    return binary


def scripts(tmp: Path) -> dict[str, Path]:
    """The three scripts, each for the probes the loop fires (bpftrace
    attaches only to probes the process has)."""
    catalog = load_catalog(REPO / "probes.yaml")
    fired = [catalog.probe(name) for name in FIRED]
    texts = {
        "generated": bpftrace.render_script(catalog, "nvmf", fired),
        "spans": spans.render_program(catalog, [s for s in catalog.spans if s.start in fired and s.end in fired]),
    }
    result = {}
    for label, text in texts.items():
        result[label] = tmp / f"{label}.bt"
        result[label].write_text(text)
    result["as written"] = result["generated"]
    result["hand-written"] = REPO / "bench" / "bpf" / "nvmf_handwritten.bt"
    result["printf floor"] = REPO / "bench" / "bpf" / "printf_floor.bt"
    return result


def bcc_tools(tmp: Path) -> dict[str, list[str]]:
    """SPDK's BCC tool now and at BCC_BEFORE, each as argv before its -p PID."""
    from probegen.generators import bcc

    now, before = tmp / "spdk_now.py", tmp / "spdk_before.py"
    now.write_text(bcc.render_tool(load_catalog(REPO / "probes.yaml")))
    before.write_text(subprocess.run(["git", "show", f"{BCC_BEFORE}:scripts/bcc/spdk.py"], cwd=REPO, check=True,
                                     capture_output=True, text=True).stdout)
    return {"bcc before": ["/usr/bin/python3", str(before)], "bcc now": ["/usr/bin/python3", str(now)]}


def tracer_argv(script, pid: int, catalog: str) -> list[str]:
    if isinstance(script, list):  # a BCC tool
        return [*script, "-p", str(pid), "--hist", *(f"--probe={p}" for p in FIRED)]
    return [sys.executable, "-m", "probegen", "trace", "-c", catalog, "-p", str(pid), str(script)]


def run_once(binary: Path, iterations: int, script, catalog: str = "probes.yaml") -> tuple[int, int, str]:
    """(hits, loop nanoseconds, what the tracer said about lost events).
    The tracer's lines are read as they come and dropped, as a terminal
    would take them (bpftrace holds back output to a file: no sign of its
    attach there)."""
    program = subprocess.Popen([str(binary), str(iterations)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, preexec_fn=lambda: _pin(PROGRAM_CPU))
    tracer = None
    try:
        assert program.stdout.readline().strip() == "READY"
        if script is not None:
            tracer = subprocess.Popen(tracer_argv(script, program.pid, catalog),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      start_new_session=True, cwd=REPO, preexec_fn=lambda: _pin(TRACER_CPUS))
            attached = threading.Event()
            stderr: list[str] = []
            threading.Thread(target=_drain, args=(tracer.stdout, attached), daemon=True).start()
            threading.Thread(target=lambda: stderr.extend(tracer.stderr), daemon=True).start()
            if not attached.wait(120):
                raise SystemExit(f"tracer did not attach: {''.join(stderr)}")
        program.stdin.write("go\n")
        program.stdin.flush()
        _, hits, _, ns = program.stdout.readline().split()
        program.wait(60)
        lost = ""
        if tracer is not None:
            time.sleep(0.5)  # let bpftrace drain its buffers before it ends
            tracer.send_signal(signal.SIGINT)
            tracer.wait(60)
            time.sleep(0.1)
            lost = " ".join(l.strip() for l in stderr if "Lost" in l)
        return int(hits), int(ns), lost
    finally:
        for process in (program, tracer):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


def _pin(cpus) -> None:
    """The traced program on a CPU of its own, the tracer (and this
    script, reading its lines) on the others: the loop's time is then what
    the probes cost it, not what it waited for a CPU bpftrace held."""
    if len(os.sched_getaffinity(0)) > 1:
        os.sched_setaffinity(0, cpus)


def _drain(stream, attached: threading.Event) -> None:
    for line in stream:
        if not attached.is_set() and line.startswith("Tracing"):
            attached.set()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20000, help="loop iterations (8 hits each)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bcc", action="store_true", help="SPDK's BCC tool --hist, now and before (see above)")
    args = parser.parse_args()
    if os.geteuid() != 0 or shutil.which("bpftrace") is None:
        print("needs root and bpftrace", file=sys.stderr)
        return 2
    _pin(TRACER_CPUS)
    with tempfile.TemporaryDirectory(prefix="bench-trace-") as directory:
        tmp = Path(directory)
        binary = build(tmp)
        configurations = {"untraced": None, **(bcc_tools(tmp) if args.bcc else scripts(tmp))}
        loop_ns: dict[str, list[int]] = {label: [] for label in configurations}
        hits = 0
        notes = {}
        for round_number in range(args.rounds):
            for label, script in configurations.items():
                hits, ns, lost = run_once(binary, args.iterations, script,
                                          "no-catalog.yaml" if label == "as written" else "probes.yaml")
                loop_ns[label].append(ns)
                if lost:
                    notes[label] = lost
            print(f"round {round_number + 1}/{args.rounds}: "
                  + ", ".join(f"{l} {v[-1] / hits:.0f} ns/hit" for l, v in loop_ns.items()), file=sys.stderr)
    base = statistics.median(loop_ns["untraced"]) / hits
    cost = {label: statistics.median(v) / hits - base for label, v in loop_ns.items() if label != "untraced"}
    print(f"{hits} hits a run ({args.iterations} iterations of 8 probes), median of {args.rounds} rounds; "
          f"untraced: {base:.0f} ns per hit")
    if args.bcc:  # each span is two hits
        for label, value in cost.items():
            print(f"{label:<14} {2 * value:>8.0f} ns per span")
        ratio = cost["bcc now"] / cost["bcc before"]
        print(f"in-kernel / event per span: {ratio:.2f}x (target: at most {BCC_TARGET:.2f}x): "
              f"{'met' if ratio <= BCC_TARGET else 'NOT met'}")
        return 0
    print(f"{'script':<14} {'ns/hit traced':>14} {'cost ns/event':>14} {'vs hand-written':>16}")
    for label, value in cost.items():
        print(f"{label:<14} {value + base:>14.0f} {value:>14.0f} {value / cost['hand-written']:>15.2f}x")
    for label, note in notes.items():
        print(f"{label}: bpftrace said: {note}")
    # The machine's noise, seen in the rounds: each round's ratio of costs.
    for label in ("generated", "as written", "printf floor"):
        ratios = sorted((g - u) / (h - u) for g, h, u in zip(loop_ns[label], loop_ns["hand-written"],
                                                              loop_ns["untraced"]))
        print(f"{label} / hand-written per round: median {statistics.median(ratios):.2f}x, "
              f"from {ratios[0]:.2f}x to {ratios[-1]:.2f}x")
    print(f"as written / hand-written: {cost['as written'] / cost['hand-written']:.2f}x; "
          f"printf floor / hand-written: {cost['printf floor'] / cost['hand-written']:.2f}x")
    ratio = cost["generated"] / cost["hand-written"]
    print(f"generated / hand-written: {ratio:.2f}x (target: at most {TARGET}x): {'met' if ratio <= TARGET else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
