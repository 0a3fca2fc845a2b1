"""The jinja2 environment every generator renders its template with."""

from __future__ import annotations

import functools
import hashlib
import os

import jinja2

import probegen.templates
from probegen import cache, escape
from probegen.gcpause import gc_paused

_OPTIONS = dict(
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,
)


class _CompiledTemplates(jinja2.FileSystemBytecodeCache):
    """Templates compiled by an earlier run: compiling one costs more than
    rendering it. jinja2 keys entries on the template's source; the file
    names add the environment's options and jinja2's version, which shape
    the compiled code too. Unwritable means uncached."""

    def dump_bytecode(self, bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def _template_cache() -> jinja2.BytecodeCache | None:
    where = cache.directory("templates")
    if where is None:
        return None
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
    except OSError:
        return None
    shape = hashlib.sha256(f"{jinja2.__version__} {sorted(_OPTIONS.items(), key=str)}".encode()).hexdigest()[:16]
    return _CompiledTemplates(where, f"{shape}-%s.cache")


@functools.lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        # Package data, next to the package's __init__ (see pyproject.toml).
        loader=jinja2.FileSystemLoader(os.path.dirname(probegen.templates.__file__)),
        bytecode_cache=_template_cache(),
        **_OPTIONS,
    )
    env.filters.update(
        c_comment=escape.c_comment,
        c_string=escape.c_string,
        printf_literal=escape.printf_literal,
        hash_comment=escape.hash_comment,
        python_comment=escape.python_comment,
        html_comment=escape.html_comment,
        one_line=escape.one_line,
    )
    return env


def render(template: str, **context) -> str:
    # Rendering builds many short-lived lists and no cycles: collecting
    # meanwhile only costs time.
    with gc_paused():
        return environment().get_template(template).render(**context)
