# The bash kernel: one bash per context, driven by the server over pipes (kernels.py, PipeKernel).
#
# A request is one line on fd $HUTCH_KERNEL_REQ_FD: "<id> <names of the cell's env_vars>". The cell's code is in
# $HUTCH_KERNEL_DIR/cell and its env_vars, as export lines, in $HUTCH_KERNEL_DIR/env (files: no JSON parser is
# needed here). The cell is sourced in this shell, so its variables, functions and directory stay for the next
# cell. Events go out one JSON a line on fd $HUTCH_KERNEL_EV_FD; the cell's output is this shell's stdout and
# stderr. A non-zero status of the cell's last command is reported as an error, as a notebook would.
__hutch_req=$HUTCH_KERNEL_REQ_FD
__hutch_ev=$HUTCH_KERNEL_EV_FD
__hutch_dir=$HUTCH_KERNEL_DIR
unset HUTCH_KERNEL_REQ_FD HUTCH_KERNEL_EV_FD HUTCH_KERNEL_DIR
__hutch_count=0
__hutch_interrupted=0

__hutch_send() { printf '%s\n' "$1" >&"$__hutch_ev"; }

# SIGINT ends the cell (the trap returns from the sourced file), not the kernel.
__hutch_on_int() { __hutch_interrupted=1; }

# The cell runs at the top level of this shell, not in a function, so that its `declare`, `local` and `return`
# mean what they mean in a script. The kernel's own variables are all named __hutch_*.
declare -A __hutch_saved=()
declare -a __hutch_unset=()
trap __hutch_on_int INT
__hutch_send '{"type": "ready"}'
while read -r -u "$__hutch_req" __hutch_id __hutch_names; do
	__hutch_saved=()
	__hutch_unset=()
	for __hutch_k in $__hutch_names; do
		if [ -n "${!__hutch_k+x}" ]; then __hutch_saved[$__hutch_k]=${!__hutch_k}; else __hutch_unset+=("$__hutch_k"); fi
	done
	source "$__hutch_dir/env"
	__hutch_count=$((__hutch_count + 1))
	__hutch_interrupted=0
	trap '__hutch_on_int; return 130' INT
	source "$__hutch_dir/cell" </dev/null
	__hutch_status=$?
	trap __hutch_on_int INT
	for __hutch_k in "${!__hutch_saved[@]}"; do export "$__hutch_k=${__hutch_saved[$__hutch_k]}"; done
	for __hutch_k in "${__hutch_unset[@]}"; do unset "$__hutch_k"; done
	if [ "$__hutch_interrupted" = 1 ]; then
		__hutch_send "{\"id\": $__hutch_id, \"type\": \"error\", \"name\": \"InterruptedError\", \"value\": \"the execution was interrupted\", \"traceback\": \"\"}"
	elif [ "$__hutch_status" != 0 ]; then
		__hutch_send "{\"id\": $__hutch_id, \"type\": \"error\", \"name\": \"ExitCodeError\", \"value\": \"exit status $__hutch_status\", \"traceback\": \"\"}"
	fi
	__hutch_send "{\"id\": $__hutch_id, \"type\": \"done\", \"count\": $__hutch_count}"
done
