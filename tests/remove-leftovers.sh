# Sourced by the scripts that run a `hutch serve` or `hutch run` of their own on a private cgroup parent and
# temporary directory (tests/conformance/lib.sh, images/code-interpreter/tests/sandbox.sh), for their cleanup.

# remove_leftovers CGPARENT DIR: sandboxes outlive their daemon by design, so this kills what is left under the
# cgroup parent CGPARENT (in every hierarchy), removes its cgroups and the parent itself, then the mounts under
# DIR and DIR. Either one empty: nothing is done (an empty parent would name every cgroup on the host).
remove_leftovers() {
	local cgparent=$1 dir=$2 g p
	[ -n "$cgparent" ] && [ -n "$dir" ] || return 0
	for g in /sys/fs/cgroup/*/"$cgparent"/* /sys/fs/cgroup/"$cgparent"/*; do
		[ -d "$g" ] || continue
		if [ -e "$g/cgroup.kill" ]; then echo 1 >"$g/cgroup.kill"; else
			for p in $(cat "$g/cgroup.procs"); do kill -9 "$p"; done
		fi
	done 2>/dev/null
	sleep 0.3
	for g in /sys/fs/cgroup/*/"$cgparent"/* /sys/fs/cgroup/"$cgparent"/*; do rmdir "$g"; done 2>/dev/null
	for g in /sys/fs/cgroup/*/"$cgparent" /sys/fs/cgroup/"$cgparent"; do rmdir "$g"; done 2>/dev/null
	grep -o " $dir/[^ ]*" /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m"; done 2>/dev/null
	rm -rf --one-file-system "$dir"
}
