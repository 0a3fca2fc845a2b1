"""Join the lines of hits that generated bpftrace scripts print in parts, and
put hits in timestamp order. A hit too long for one printf prints N lines
(each one perf record, so never mixed with another CPU's text)::

    SECONDS.MICROSECONDS: PROBE [tid TID 1/N] name=value ...
    SECONDS.MICROSECONDS: PROBE [tid TID K/N] +TEXT

TEXT continuing the hit's text exactly; other lines may come between.
Joined, they are ``SECONDS.MICROSECONDS: PROBE name=value ...`` (with
``[tid TID]`` after PROBE for the probes in ``keep_tid``).
"""

from __future__ import annotations

import heapq
import re
import time

TID = re.compile(r"(?P<head>\d+\.\d{6}: (?P<probe>\S+)) \[tid (?P<tid>\d+)\]")
PART = re.compile(r"(?P<head>\d+\.\d{6}: (?P<probe>\S+)) \[tid (?P<tid>\d+) (?P<part>\d+)/(?P<parts>\d+)\](?P<rest>.*)")
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


def join_lines(lines) -> list[str]:
    """All of a tracer's lines with split hits joined."""
    joiner = HitJoiner()
    joined = [shown for line in lines for shown in joiner.feed(line)]
    return joined + joiner.finish()


STAMP = re.compile(r"(\d+)\.(\d{6}): ")  # bpftrace's nsecs (CLOCK_MONOTONIC)
# bpftrace prints each CPU's perf buffer in turn: a hit is held until it is
# WINDOW seconds old (or LIMIT are held), then printed in timestamp order.
WINDOW = 0.25
LIMIT = 10_000


class Reorder:
    """Hit lines in timestamp order; other lines print at once, after every hit held."""

    def __init__(self, window: float = WINDOW, limit: int = LIMIT, clock=time.monotonic):
        self._held: list[tuple[int, int, str]] = []  # a heap: (microseconds, arrival, line)
        self._arrived = 0
        self._window = int(window * 1_000_000)
        self._limit = limit
        self._clock = clock

    def feed(self, line: str) -> list[str]:
        match = STAMP.match(line)
        if match is None:
            return self.finish() + [line]
        heapq.heappush(self._held, (int(match[1]) * 1_000_000 + int(match[2]), self._arrived, line))
        self._arrived += 1
        return self.due()

    def due(self) -> list[str]:
        """The held hits whose time has come."""
        oldest = int(self._clock() * 1_000_000) - self._window
        out = []
        while self._held and (self._held[0][0] <= oldest or len(self._held) > self._limit):
            out.append(heapq.heappop(self._held)[2])
        return out

    def finish(self) -> list[str]:
        return [heapq.heappop(self._held)[2] for _ in range(len(self._held))]
