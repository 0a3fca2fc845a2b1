"""``probegen trace --timeline FILE``: the hits read back from the lines printed,
and the catalog's spans between them, as trace-event JSON (runtime/timeline.py)."""

from __future__ import annotations

import json
import os
import re
import signal

from probegen.errors import InputError
from probegen.files.output import open_stream
from probegen.generators.lines import probe_line
from probegen.runtime.timeline import trace_events


class Recorder:
    """Hits from the lines trace prints (``SECONDS.MICROS: PROBE [tid TID] label=value
    ...``; without a tid, on the process's track). ``labels``: probe -> its labels."""

    def __init__(self, labels, spans, pid):
        self.labels, self.spans, self.pid, self.hits = labels, spans, pid, []

    def tap(self, lines):
        for line in lines:
            head, _, rest = line.partition(": ")
            probe, _, rest = rest.partition(" ")
            seconds, _, micros = head.partition(".")
            tid = re.match(r"\[tid (\d+)\] ?", rest)
            rest = rest[tid.end():] if tid else rest
            if probe not in self.labels or not (seconds.isdigit() and micros.isdigit()):
                continue
            args, labels = {}, self.labels[probe]
            for number, label in enumerate(labels):  # a value runs to the next label (strings hold spaces)
                start = rest.find(label + "=") + len(label) + 1
                end = rest.find(" " + labels[number + 1] + "=", start) if number + 1 < len(labels) else len(rest)
                value = rest[start:end if end >= 0 else len(rest)]
                args[label] = int(value) if value.lstrip("-").isdigit() else value
            self.hits.append(((int(seconds) * 1000000 + int(micros)) * 1000, int(tid[1]) if tid else None, probe, args))
        return lines

    def events(self):
        """Spans matched by thread too when every hit named its thread."""
        threads = all(tid is not None for _, tid, _, _ in self.hits)
        spans = [s for s in self.spans if s[3] or threads]
        return trace_events([(ns, tid or self.pid, p, a) for ns, tid, p, a in self.hits], spans, self.pid)


def with_timeline(path, catalog, pid, run) -> int:
    """run(tap, labels), the hits it prints then written to ``path``."""
    if catalog is None:
        raise InputError("probegen trace: error: --timeline needs the catalog (--catalog) to read the hits")
    labels = {p.name: [f.label for f in probe_line(catalog, p).fields] for p in catalog.probes}
    spans = [(s.name, s.start.name, s.end.name, [(k.start.name, k.end.name) for k in s.key]) for s in catalog.spans]
    recorder = Recorder(labels, spans, pid)
    status = run(recorder.tap, recorder.labels)  # the labels of lines fitted to the process replace the catalog's
    text = json.dumps(recorder.events())
    # The trace has ended: a Ctrl-C now would only cut the file short.
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with os.fdopen(open_stream(path), "w", encoding="utf-8") as file:
            file.write(text)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return status
