"""Where a catalog's ``outputs:`` may write: each output a path of its own
(no file in or as a script directory), inside the catalog's directory unless
``allow_outside_outputs: true`` (a catalog someone else wrote must not
overwrite files elsewhere).
"""

import os
from pathlib import Path

import yaml

from probegen.catalog.schema_check import load_schema


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def output_paths(builder, outputs, allow_outside: bool) -> dict[str, Path]:
    """The paths under ``outputs`` (its node) by kind, each bad one reported
    through ``builder.error``."""
    kinds = load_schema()["properties"]["outputs"]["properties"]
    directories = {kind for kind, schema in kinds.items() if schema.get("x-directory")}  # scripts: they may nest
    entries = outputs.value if isinstance(outputs, yaml.MappingNode) else ()
    nodes = {key.value: value for key, value in entries if key.value in kinds and isinstance(value, yaml.ScalarNode)}
    base = str(builder.path.parent)  # already resolved
    paths: dict[str, str] = {}  # kind -> normalised path, of the outputs placed so far
    for kind, node in nodes.items():
        if builder.reported(node):  # a character no path may hold (a NUL would break resolving it)
            continue
        written = node.value
        if not written.strip():
            builder.error(node, f"outputs: '{kind}' is empty; give a path relative to the catalog")
            continue
        path = os.path.normpath(os.path.join(base, written))
        outside = None if allow_outside else (
            "is absolute; outputs stay in the catalog's directory" if os.path.isabs(written)
            else "leaves the catalog's directory" if not _inside(path, base)
            else "leads out of the catalog's directory through a symbolic link"
            if not _inside(str(Path(path).resolve()), base) else None)
        if outside:
            builder.error(node, f"outputs: '{kind}' path '{written}' {outside} "
                                "(set 'allow_outside_outputs: true' to allow it)")
            continue
        if path == base and kind not in directories:
            builder.error(node, f"outputs: '{kind}' path '{written}' is the catalog's directory, not a file")
            continue
        paths[kind] = path
        for other in list(paths)[:-1]:  # the outputs placed before it
            if path == paths[other]:
                builder.error(node, f"outputs: '{kind}' and '{other}' are both '{written}'; "
                                    "each output needs its own path")
                continue
            for inner, outer in ((kind, other), (other, kind)):
                if _inside(paths[inner], paths[outer]) and not {inner, outer} <= directories:
                    builder.error(node, f"outputs: '{inner}' ('{nodes[inner].value}') is inside '{outer}' "
                                        f"('{nodes[outer].value}'); each output needs its own path")
    return {kind: builder.path.parent / node.value for kind, node in nodes.items()}
