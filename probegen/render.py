"""The jinja2 environment every generator renders its template with."""

from __future__ import annotations

import functools
from importlib import resources

import jinja2

from probegen import escape


@functools.lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resources.files("probegen.templates"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters.update(
        c_comment=escape.c_comment,
        c_string=escape.c_string,
        printf_literal=escape.printf_literal,
        hash_comment=escape.hash_comment,
        one_line=escape.one_line,
    )
    return env


def render(template: str, **context) -> str:
    return environment().get_template(template).render(**context)
