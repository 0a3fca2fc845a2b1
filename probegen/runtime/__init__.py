"""Code that runs while tracing: starting bpftrace on a process."""
