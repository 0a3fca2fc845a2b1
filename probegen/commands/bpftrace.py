"""Generate bpftrace scripts from the catalog: GROUP.bt for each probe
group, all.bt with every probe, counts.bt counting hits, and spans.bt
measuring the catalog's spans when it declares any.

Probes are written usdt:*:PROVIDER:NAME and the scripts have no BEGIN or END
block: run them with probegen trace PID, bpftrace -p PID, or SPDK's
scripts/bpftrace.sh.
"""

from probegen.commands.scripts import configure, run  # noqa: F401 (this command's)

HELP = "generate bpftrace scripts (one per group, all, counts, spans)"
