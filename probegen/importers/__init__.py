"""Catalogs from what already describes probes: the notes of built binaries
(`probegen import BINARY`) and SystemTap/DTrace provider files (`probes.d`).
Each becomes catalog YAML through templates/catalog.yaml.j2, loaded back
with the catalog loader, so the result is always a valid catalog."""
