"""probegen: USDT probes described once, in a YAML catalog (doc/internals.md)."""

__version__ = "0.1.0"
