"""Join the lines of hits that generated bpftrace scripts print in parts: a hit too long
for one printf prints ``SECONDS.MICROSECONDS: PROBE [tid TID 1/N] name=value ...``, then
``... [tid TID K/N] +TEXT`` continuing its text (each line one perf record; other lines
may come between), joined as ``SECONDS.MICROSECONDS: PROBE name=value ...``."""

import re

# A hit's line, naming its thread or not (``[tid TID]``, or ``[tid TID K/N]`` for part K of N).
HIT = re.compile(r"(?P<head>\d+\.\d{6}: (?P<probe>\S+))(?: \[tid (?P<tid>\d+)(?: (?P<part>\d+)/(?P<parts>\d+))?\])?"
                 r"(?P<rest>.*)")
STAMP = re.compile(r"(\d+)\.(\d{6}): ")  # bpftrace's nsecs (CLOCK_MONOTONIC)
CONTINUED = " +"


class HitJoiner:
    """Fed the tracer's lines, gives back the lines to show: a split hit as one
    line once its last part arrives; ``finish``: parts never completed, as they came."""

    def __init__(self, keep_tid=()) -> None:
        self.keep_tid = keep_tid
        self._pending: dict[tuple[str, str], tuple[list[str], list[str], int]] = {}  # (head, tid) -> (lines, texts, N)

    def feed(self, line: str) -> list[str]:
        match = HIT.fullmatch(line)
        if match is None or match["part"] is None:
            return [line]
        key, part, parts, rest = (match["head"], match["tid"]), int(match["part"]), int(match["parts"]), match["rest"]
        if part == 1:
            stale = self._pending.pop(key, ([],))[0]
            head = match["head"] + f" [tid {match['tid']}]" * (match["probe"] in self.keep_tid)
            self._pending[key] = ([line], [head + rest], parts)
            return stale + self._complete(key)
        lines, texts, expected = self._pending.get(key, ((), (), None))
        if part != len(lines) + 1 or parts != expected or not rest.startswith(CONTINUED):
            return [line]  # a part whose first line was lost: shown as it came
        lines.append(line)
        texts.append(rest[len(CONTINUED):])
        return self._complete(key)

    def _complete(self, key) -> list[str]:
        lines, texts, parts = self._pending[key]
        if len(lines) < parts:
            return []
        del self._pending[key]
        return ["".join(texts)]

    def finish(self) -> list[str]:
        lines = [line for hit in self._pending.values() for line in hit[0]]
        self._pending.clear()
        return lines
