"""``probegen trace --timeline FILE``: the hits read back from the lines printed,
and the catalog's spans between them, as trace-event JSON (runtime/timeline.py)."""

import json
import os
import signal

from probegen.errors import CommandError
from probegen.files.output import open_stream
from probegen.generators.lines import probe_line
from probegen.runtime import trace
from probegen.runtime.hitlines import HIT, STAMP
from probegen.runtime.timeline import trace_events


def _hit(line: str, labels: dict) -> tuple | None:
    """(ns, tid or None, probe, {label: value}) of a line ``SECONDS.MICROS: PROBE
    [tid TID] label=value ...`` of a probe in ``labels`` (probe -> its labels); None
    for any other line, and for a part of a split hit never completed."""
    match = HIT.fullmatch(line)
    if match is None or match["part"] is not None or match["probe"] not in labels:
        return None
    seconds, micros = STAMP.match(line).groups()
    rest = match["rest"].removeprefix(" ")
    args, names = {}, labels[match["probe"]]
    for number, label in enumerate(names):  # a value runs to the next label (strings hold spaces)
        start = rest.find(label + "=") + len(label) + 1
        end = rest.find(" " + names[number + 1] + "=", start) if number + 1 < len(names) else len(rest)
        value = rest[start:end if end >= 0 else len(rest)]
        args[label] = int(value) if value.lstrip("-").isdigit() else value
    tid = match["tid"]
    return (int(seconds) * 1000000 + int(micros)) * 1000, int(tid) if tid else None, match["probe"], args


def with_timeline(path, pid, paths, output, *, catalog, **options) -> int:
    """trace.run, then the hits of the lines it printed written to ``path``, read by the
    labels of the catalog's lines or of those made again for the process. Spans are
    matched by thread too when every hit named its thread."""
    if catalog is None:
        raise CommandError("--timeline needs the catalog (--catalog) to read the hits")
    labels = {p.name: [f.label for f in probe_line(catalog, p).fields] for p in catalog.probes}
    lines: list[str] = []
    status = trace.run(pid, paths, output, tap=lines.extend, labels=labels, catalog=catalog, **options)
    hits = [hit for hit in (_hit(line, labels) for line in lines) if hit is not None]
    threads = all(tid is not None for _, tid, _, _ in hits)
    spans = [(s.name, s.start.name, s.end.name, [(k.start.name, k.end.name) for k in s.key])
             for s in catalog.spans if s.key or threads]
    text = json.dumps(trace_events([(ns, tid or pid, p, a) for ns, tid, p, a in hits], spans, pid))
    # The trace has ended: a Ctrl-C now would only cut the file short.
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with os.fdopen(open_stream(path), "w", encoding="utf-8") as file:
            file.write(text)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return status
