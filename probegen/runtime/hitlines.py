"""Join the lines of hits that generated bpftrace scripts print in parts.

A hit too long for one bpftrace printf prints N whole lines (each one perf
record, so bpftrace never mixes two CPUs' text inside a line)::

    SECONDS.MICROSECONDS: PROBE [tid TID 1/N] name=value ...
    SECONDS.MICROSECONDS: PROBE [tid TID K/N] +TEXT

where TEXT continues the hit's text exactly (it may begin inside a value).
Other lines of the same or another thread may come between them. Joined,
they are the one line the hit would print if it fitted one printf::

    SECONDS.MICROSECONDS: PROBE name=value ...

(or, for the probes in ``keep_tid``, ``SECONDS.MICROSECONDS: PROBE [tid TID]
name=value ...``, as the lines `probegen trace` makes print the thread for
its own use).
"""

from __future__ import annotations

import heapq
import re
import time

TID = re.compile(r"(?P<head>\d+\.\d{6}: (?P<probe>\S+)) \[tid (?P<tid>\d+)\]")
PART = re.compile(r"(?P<head>\d+\.\d{6}: (?P<probe>\S+)) \[tid (?P<tid>\d+) (?P<part>\d+)/(?P<parts>\d+)\](?P<rest>.*)")
CONTINUED = " +"


class HitJoiner:
    """Feed it the tracer's lines in order; it gives back the lines to show:
    every line that is no part of a split hit at once, a split hit as one
    line when its last part arrives. Parts never completed (records lost,
    the tracer stopped) are given back as they came by ``finish``."""

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


# A hit line's timestamp: bpftrace's nsecs (CLOCK_MONOTONIC), as SECONDS.MICROSECONDS.
STAMP = re.compile(r"(\d+)\.(\d{6}): ")
# bpftrace prints each CPU's perf buffer in turn, so hits from several CPUs
# come out of order, by about one poll of the buffers. A hit is held until
# it is WINDOW old (or LIMIT hits are held), then printed in timestamp
# order; one arriving later than that, older than a hit already printed,
# is printed as it comes.
WINDOW = 0.25
LIMIT = 10_000


class Reorder:
    """Hit lines in timestamp order across CPUs, within a bounded window.
    Lines that are no hit (a banner, maps at exit) print at once, after
    every hit held."""

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
