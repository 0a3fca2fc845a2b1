"""Join the lines of hits that generated bpftrace scripts print in parts. A hit
too long for one printf prints N lines (each one perf record, so never mixed
with another CPU's text)::

    SECONDS.MICROSECONDS: PROBE [tid TID 1/N] name=value ...
    SECONDS.MICROSECONDS: PROBE [tid TID K/N] +TEXT

TEXT continuing the hit's text exactly; other lines may come between.
Joined, they are ``SECONDS.MICROSECONDS: PROBE name=value ...`` (with
``[tid TID]`` after PROBE for the probes in ``keep_tid``).
"""

from __future__ import annotations

import re

TID = re.compile(r"(?P<head>\d+\.\d{6}: (?P<probe>\S+)) \[tid (?P<tid>\d+)\]")
PART = re.compile(r"(?P<head>\d+\.\d{6}: (?P<probe>\S+)) \[tid (?P<tid>\d+) (?P<part>\d+)/(?P<parts>\d+)\](?P<rest>.*)")
STAMP = re.compile(r"(\d+)\.(\d{6}): ")  # bpftrace's nsecs (CLOCK_MONOTONIC)
CONTINUED = " +"


class HitJoiner:
    """Fed the tracer's lines, gives back the lines to show: a split hit as one
    line once its last part arrives; ``finish``: parts never completed, as they came."""

    def __init__(self, keep_tid=()) -> None:
        self.keep_tid = keep_tid
        # (timestamp and probe, tid) -> [raw lines, joined text, next part, parts]
        self._pending: dict[tuple[str, str], list] = {}

    def feed(self, line: str) -> list[str]:
        match = PART.fullmatch(line)
        if match is None:
            return [line]
        key = (match["head"], match["tid"])
        part, parts, rest = int(match["part"]), int(match["parts"]), match["rest"]
        if part == 1:
            stale = self._pending.pop(key, None)
            head = match["head"] + f" [tid {match['tid']}]" * (match["probe"] in self.keep_tid)
            self._pending[key] = [[line], head + rest, 2, parts]
            shown = stale[0] if stale else []
            return shown + self._complete(key)
        hit = self._pending.get(key)
        if hit is None or part != hit[2] or parts != hit[3] or not rest.startswith(CONTINUED):
            return [line]  # a part whose first line was lost: shown as it came
        hit[0].append(line)
        hit[1] += rest[len(CONTINUED):]
        hit[2] += 1
        return self._complete(key)

    def _complete(self, key) -> list[str]:
        hit = self._pending[key]
        if hit[2] <= hit[3]:
            return []
        del self._pending[key]
        return [hit[1]]

    def finish(self) -> list[str]:
        lines = [line for hit in self._pending.values() for line in hit[0]]
        self._pending.clear()
        return lines

