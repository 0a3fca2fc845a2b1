"""Checks of built binaries and hand-written scripts against the catalog."""
