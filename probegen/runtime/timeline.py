"""Hits and spans as Chrome trace-event JSON (Perfetto UI, chrome://tracing,
speedscope): a track per thread, an instant event per hit, a slice per span
on the thread that started it. Standard library only: BCC tools carry it."""


def trace_events(hits, spans, pid):
    """The trace-event object of ``hits`` [(ns, tid, probe, {arg: value})] in time
    order and ``spans`` [(name, start probe, end probe, [(start arg, end arg)])],
    an end matched to a start by those arguments' values (else by thread)."""
    events, open_ = [], {}
    for ns, tid, probe, args in hits:
        events.append({"name": probe, "ph": "i", "s": "t", "ts": ns / 1000, "pid": pid, "tid": tid, "args": args})
        for name, start, end, keys in spans:
            if probe == start:
                key = tuple(args.get(a) for a, _ in keys) if keys else tid
                open_[(name, key)] = (ns, tid, args)
            elif probe == end:
                begun = open_.pop((name, tuple(args.get(b) for _, b in keys) if keys else tid), None)
                if begun is not None:
                    events.append({"name": name, "ph": "X", "ts": begun[0] / 1000, "dur": (ns - begun[0]) / 1000,
                                   "pid": pid, "tid": begun[1], "args": begun[2]})
    return {"traceEvents": events, "displayTimeUnit": "ns"}
