"""Generate the Markdown reference of every probe from the catalog.

Writes only when the content changed. Without -o and without outputs.docs
in the catalog, prints to stdout.
"""

from probegen.commands import add_options, write_output

HELP = "generate the Markdown reference of every probe"


def configure(parser):
    add_options(parser, "catalog")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="Markdown file to write (default: the catalog's outputs.docs, else stdout; "
                        "'-' for stdout)")
    add_options(parser, "depfile", "stamp", "force")


def run(args) -> int:
    from probegen.catalog import load_catalog
    from probegen.generators.docs import TEMPLATE, render_docs

    catalog = load_catalog(args.catalog)
    output = args.output or catalog.outputs.get("docs") or "-"
    return write_output(args, output, lambda path: render_docs(catalog, path), args.catalog, TEMPLATE)
