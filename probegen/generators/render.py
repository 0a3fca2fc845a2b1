"""The jinja2 environment every generator renders its template with."""

from __future__ import annotations

import functools
import os

import jinja2

import probegen.templates
from probegen.files import marker
from probegen.generators import escape

_OPTIONS = dict(
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,
)


@functools.lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        # Package data, next to the package's __init__ (see pyproject.toml).
        loader=jinja2.FileSystemLoader(os.path.dirname(probegen.templates.__file__)),
        **_OPTIONS,
    )
    env.filters.update(
        c_comment=escape.c_comment,
        c_string=escape.c_string,
        printf_literal=escape.printf_literal,
        hash_comment=escape.hash_comment,
        python_comment=escape.python_comment,
        bpftrace_comment=escape.bpftrace_comment,
        html_comment=escape.html_comment,
        one_line=escape.one_line,
    )
    # The first line of every generated file (probegen.files.marker).
    env.globals["marker"] = marker.LINES
    return env


def render(template: str, **context) -> str:
    return environment().get_template(template).render(**context)
