"""A catalog's ``spans:`` as the model, checked beyond the schema: the
probes exist, key arguments are in both with compatible types, ``by``
arguments in one, and scripts can read them all.
"""

import yaml

from probegen.bpftrace import MAX_ARG_INDEX
from probegen.catalog.ctype import Kind
from probegen.catalog.model import Arg, Probe, Span, SpanBy, SpanKey


# What a key compares: arguments of one class can be matched (an int and an
# enum are both numbers in the note); any other kind is an integer.
_KEY_CLASS = {Kind.STRING: "string", Kind.POINTER: "pointer", Kind.FUNCTION_POINTER: "pointer"}


def build_spans(builder, node, data, probes: list[Probe]) -> tuple[Span, ...]:
    """``builder``: the loader's (positions, messages)."""
    by_name = {p.name: p for p in probes}
    spans: list[Span] = []
    seen: dict[str, yaml.Node] = {}
    for item, fields, values, name in builder.entries(node, data):
        named = builder.unique(fields, name, "span", seen)
        start, end = (_probe(builder, fields.get(role), by_name, name, role) for role in ("start", "end"))
        if start is not None and start is end:
            builder.error(fields["end"], f"span '{name}': start and end are the same probe '{end.name}'")
            continue
        if not named or start is None or end is None:
            continue
        keys, bys = (_arguments(builder, fields.get(what), name, what, start, end) for what in ("key", "by"))
        if keys is not None and bys is not None:
            spans.append(Span(name, values.get("doc", ""), start, end, keys, bys, builder.loc(item)))
    return tuple(spans)


def _probe(builder, node, probes: dict[str, Probe], span: str, role: str) -> Probe | None:
    if not isinstance(node, yaml.ScalarNode) or builder.reported(node):
        return None
    probe = probes.get(str(node.value))
    if probe is None:
        builder.error(node, f"span '{span}': {role} probe '{node.value}' is not in the catalog's probes")
    return probe


def _readable(builder, node, span: str, probe: Probe, arg: Arg) -> bool:
    if arg.index > MAX_ARG_INDEX:
        builder.error(node, f"span '{span}': '{arg.name}' is arg{arg.index} of '{probe.name}'; bpftrace 0.17 "
                            f"reads arg0..arg{MAX_ARG_INDEX} only, so span scripts cannot read it")
        return False
    return True


def _arguments(builder, node, span: str, what: str, start: Probe, end: Probe) -> tuple | None:
    """The span's ``key`` (SpanKey) or ``by`` (SpanBy) arguments; None if one is unusable."""
    if node is None:
        return ()
    if not isinstance(node, yaml.SequenceNode) or builder.reported(node):
        return None
    names: dict[str, yaml.Node] = {}
    for item in node.value:
        if not isinstance(item, yaml.ScalarNode) or builder.reported(item):
            return None
        if item.value in names:
            builder.error(item, f"span '{span}': '{item.value}' appears twice in '{what}'")
            return None
        names[item.value] = item
    found = []  # each name found, or reported
    for name, item in names.items():
        start_arg, end_arg = start.arg(name), end.arg(name)
        if what == "by":
            if end_arg is None and start_arg is None:
                builder.error(item, f"span '{span}': by '{name}' is not an argument of '{end.name}' or '{start.name}'")
            elif _readable(builder, item, span, end if end_arg else start, end_arg or start_arg):
                found.append(SpanBy(name, end_arg or start_arg, end_arg is None))
            continue
        missing = [p.name for p, a in ((start, start_arg), (end, end_arg)) if a is None]
        if missing:
            builder.error(item, f"span '{span}': key '{name}' is not an argument of "
                                f"{' and '.join(repr(m) for m in missing)} (a key must be an argument of both probes)")
        elif _KEY_CLASS.get(start_arg.ctype.kind) != _KEY_CLASS.get(end_arg.ctype.kind):
            builder.error(item, f"span '{span}': key '{name}' is {start_arg.ctype.spelling} in '{start.name}' but "
                                f"{end_arg.ctype.spelling} in '{end.name}': a key compares the same kind of value "
                                "(integers and enums, pointers, or strings)")
        elif _readable(builder, item, span, start, start_arg) and _readable(builder, item, span, end, end_arg):
            found.append(SpanKey(name, start_arg, end_arg))
    return tuple(found) if len(found) == len(names) else None
