"""Wall-clock timing of whole processes for the benchmarks.

Commands are run in turns (each once per round) so that a slow spell of a
shared machine hits all of them alike; each keeps its best round.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def compile_probegen() -> None:
    """Write probegen's .pyc files first: with PYTHONDONTWRITEBYTECODE set
    (or a read-only checkout) every run would compile it from source."""
    subprocess.run([PYTHON, "-m", "compileall", "-q", str(REPO / "probegen"), str(REPO / "templates")],
                   check=True, stdout=subprocess.DEVNULL)


class Command:
    def __init__(self, label: str, argv: list[str], env: dict | None = None, before=None):
        self.label, self.argv, self.env, self.before = label, argv, env, before
        self.times: list[float] = []
        self.cpu_times: list[float] = []  # user + system of the process: less swayed by a busy machine
        self.max_rss_mb = 0.0  # the largest resident set of any run

    def run(self) -> None:
        if self.before:
            self.before()  # untimed set-up, e.g. editing the catalog
        start = time.perf_counter()
        process = subprocess.Popen(self.argv, env=self.env, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)  # this child's own usage
        self.times.append(time.perf_counter() - start)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode:
            raise subprocess.CalledProcessError(process.returncode, self.argv)
        self.cpu_times.append(usage.ru_utime + usage.ru_stime)
        self.max_rss_mb = max(self.max_rss_mb, usage.ru_maxrss / 1024)

    @property
    def best_ms(self) -> float:
        return min(self.times) * 1000

    @property
    def best_cpu_ms(self) -> float:
        return min(self.cpu_times) * 1000


def race(commands: list[Command], rounds: int, warmup: int = 2) -> None:
    for _ in range(warmup):
        for command in commands:
            command.run()
    for command in commands:
        command.times.clear()
        command.cpu_times.clear()
    for _ in range(rounds):
        for command in commands:
            command.run()

