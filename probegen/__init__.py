"""probegen: USDT probes described once, in a YAML catalog.

The catalog model (``probegen.catalog``) is the hub; generators and checkers
take a loaded ``Catalog``. Everything the command line does is callable from
Python too.
"""

__version__ = "0.1.0"
