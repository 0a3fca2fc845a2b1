"""The jinja2 environment every generator renders its template with."""

import os

import jinja2

import probegen.templates
from probegen.files import marker
from probegen.generators import escape

_ENVIRONMENT = jinja2.Environment(
    # Package data, next to the package's __init__ (see pyproject.toml).
    loader=jinja2.FileSystemLoader(os.path.dirname(probegen.templates.__file__)),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,
)
_ENVIRONMENT.filters.update({name: getattr(escape, name) for name in (
    "c_comment", "c_string", "hash_comment", "python_comment", "bpftrace_comment", "html_comment")})
_ENVIRONMENT.globals["marker"] = marker.LINES  # the first line of every generated file (files/marker.py)


def render(template: str, **context) -> str:
    return _ENVIRONMENT.get_template(template).render(**context)
