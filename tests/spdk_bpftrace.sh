#!/usr/bin/env bash
# What SPDK's scripts/bpftrace.sh does, written here to run generated scripts
# the way SPDK users do: usage: tests/spdk_bpftrace.sh PID SCRIPT...
#  1. scripts/bpf/gen.py: on a line starting usdt:__EXE__:NAME or
#     uprobe:__EXE__:NAME, __EXE__ becomes the file `bpftrace -l -p PID`
#     lists for that probe (else the executable); everywhere else __EXE__
#     becomes the executable and __PID__ the pid;
#  2. scripts/bpf/gen_enums.sh: appends a BEGIN block filling @target and
#     @subsystem with enum names and an END block clearing them;
#  3. bpftrace -p PID -e "$SCRIPT" (BPF_OUTFILE: -o FILE).
# ECHO_SCRIPT=1 prints the program first, as SPDK's does.
set -e
if [ $# -lt 2 ]; then
	echo "usage: $0 <pid> <script>..." >&2
	exit 1
fi
pid=$1
shift
exe=$(readlink -f "/proc/$pid/exe")
listing=$(bpftrace -l -p "$pid")

fixup() {
	local line type name path
	while IFS= read -r line || [ -n "$line" ]; do
		if [[ $line =~ ^(usdt|uprobe):__EXE__:([A-Za-z0-9_]+) ]]; then
			type=${BASH_REMATCH[1]} name=${BASH_REMATCH[2]}
			# gen.py keys the listing by (type, last field)
			path=$(awk -F: -v t="$type" -v n="$name" '$1 == t && $NF == n { p = $2 } END { print p }' <<< "$listing")
			line=${line//__EXE__/${path:-$exe}}
		fi
		line=${line//__EXE__/$exe}
		printf '%s\n' "${line//__PID__/$pid}"
	done < "$1"
}

script=""
for file in "$@"; do
	script+=$(fixup "$file")$'\n'
done
# gen_enums.sh's output (names grepped from SPDK's sources there; SPDK's
# nvmf_tgt_state and spdk_nvmf_subsystem_state here)
targets=(INIT_NONE INIT_CREATE_TARGET INIT_CREATE_POLL_GROUPS INIT_START_SUBSYSTEMS RUNNING
	FINI_STOP_LISTEN FINI_STOP_SUBSYSTEMS FINI_DESTROY_SUBSYSTEMS FINI_DESTROY_POLL_GROUPS
	FINI_DESTROY_TARGET STOPPED ERROR)
subsystems=(INACTIVE ACTIVATING ACTIVE PAUSING PAUSED RESUMING DEACTIVATING NUM_STATES)
script+=$'\n\tBEGIN {\n'
for i in "${!targets[@]}"; do script+="  @target[$i] = \"${targets[i]}\";"$'\n'; done
for i in "${!subsystems[@]}"; do script+="  @subsystem[$i] = \"${subsystems[i]}\";"$'\n'; done
script+=$'\t}\n\tEND {\n  clear(@target);\n  clear(@subsystem);\n\t}\n'
if [ -n "$ECHO_SCRIPT" ]; then
	echo "$script"
fi
exec bpftrace -p "$pid" -e "$script" ${BPF_OUTFILE:+-o "$BPF_OUTFILE"}
