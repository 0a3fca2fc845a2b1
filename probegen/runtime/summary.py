"""`probegen trace`'s summary modes: programs made from the catalog (``--hist``:
span latency histograms, ``--count``: hits per probe), and ``--json``:
bpftrace's ``-f json`` read back into the JSON lines doc/tracing.md describes,
named after the catalog's spans and probes."""

import json

from probegen.catalog import Catalog
from probegen.errors import CommandError
from probegen.generators.spans import HITS_MAP, SPAN_SCRIPT, hist_map, render_program, unmatched_map
from probegen.runtime.trace import Script, probe_holders


def _pick(wanted: str | None, known: dict, what: str, catalog: Catalog) -> list | None:
    """The named entries of ``known`` ([] when not asked), None for every one (no name given)."""
    names = [n for n in (part.strip() for part in (wanted or "").split(",")) if n]
    unknown = [n for n in names if n not in known]
    if unknown:
        have = ", ".join(known) or "none"
        raise CommandError(f"{catalog.path.name} has no {what} {', '.join(unknown)} "
                         f"(its {what}s: {have})")
    return None if wanted is not None and not names else [known[n] for n in dict.fromkeys(names)]


def summary_script(catalog: Catalog, pid: int, hist: str | None, count: str | None,
                   interval: int | None = None, deadline: float | None = None) -> Script:
    """The program for --hist SPANS and --count PROBES (comma-separated; empty:
    every one the process has)."""
    spans = _pick(hist, {s.name: s for s in catalog.spans}, "span", catalog)
    counted = _pick(count, {p.name: p for p in catalog.probes}, "probe", catalog)
    if spans is None or counted is None:
        present = {name for _, name in probe_holders(pid, {(None, p.name) for p in catalog.probes}, deadline)}
    if spans is None:
        spans = [s for s in catalog.spans if s.start.name in present and s.end.name in present]
        if not spans:
            raise CommandError(f"process {pid} has the probes of none of "
                             f"{catalog.path.name}'s spans" if catalog.spans else
                             f"{catalog.path.name} declares no spans")
    if counted is None:
        counted = [p for p in catalog.probes if p.name in present]
        if not counted:
            raise CommandError(f"process {pid} has none of {catalog.path.name}'s probes")
    what = [f"{len(spans)} span{'s' if len(spans) != 1 else ''}"] if spans else []
    what += [f"hits of {len(counted)} probe{'s' if len(counted) != 1 else ''}"] if counted else []
    text = render_program(catalog, spans, counted, interval=interval, title=" and ".join(what))
    return Script(f"<{SPAN_SCRIPT} of {catalog.path.name}>", text)


class JsonLines:
    """Turns bpftrace -f json lines into probegen's JSON lines."""

    def __init__(self, catalog: Catalog | None = None):
        self.attached: int | None = None  # USDT probes attached, set by trace (else bpftrace's attach points)
        self.maps: dict[str, tuple] = {HITS_MAP: ("hits", None)}
        for span in catalog.spans if catalog is not None else ():
            self.maps[hist_map(span)] = ("span", span)
            self.maps[unmatched_map(span)] = ("unmatched", span)

    def convert(self, line: str) -> list[str]:
        if not line.strip():
            return []
        try:
            event = json.loads(line)
        except ValueError:
            return [_dump({"type": "text", "text": line})]
        kind, data = (event.get("type"), event.get("data")) if isinstance(event, dict) else (None, None)
        if kind == "attached_probes" and isinstance(data, dict):
            probes = data.get("probes") if self.attached is None else self.attached
            return [_dump({"type": "attached", "probes": probes})]
        if kind == "time" and isinstance(data, str):
            return [_dump({"type": "interval", "time": data.strip()})]
        if kind in ("hist", "map") and isinstance(data, dict) and len(data) == 1:
            (name, value), = data.items()
            what, span = self.maps.get(name, (None, None))
            if what == "hits" and isinstance(value, dict):
                return [_dump({"type": "hits", "probe": k, "count": v}) for k, v in value.items() if v]
            if what == "unmatched" and isinstance(value, int):
                return [_dump({"type": "unmatched", "span": span.name, "count": value})] if value else []
            keyed = value if span is not None and span.by else {"": value}
            if what == "span" and isinstance(keyed, dict):
                return [_dump(h) for h in (_hist(span, key, buckets) for key, buckets in keyed.items()) if h["count"]]
        return [line]


def _hist(span, key: str, buckets) -> dict:
    # bpftrace joins a tuple key's parts with ','.
    parts = key.split(",", len(span.by) - 1) if span.by else []
    by = {}
    for b, part in zip(span.by, parts):  # an enum without a name prints its number
        by[b.name] = int(part) if b.arg.ctype.is_integer_like and part.lstrip("-").isdigit() else part
    kept = [b for b in buckets if isinstance(b, dict) and b.get("count")]
    return {"type": "span", "span": span.name, "by": by, "unit": "us",
            "count": sum(b["count"] for b in kept), "buckets": kept}


def _dump(value: dict) -> str:
    return json.dumps(value, separators=(", ", ": "))
