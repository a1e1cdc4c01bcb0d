#!/usr/bin/env bash
# memlimit.sh - the daemon and its readers inside a memory cgroup (v1) of
# 256 MiB and of 64 MiB, in both read modes: the default cache budget
# follows the cgroup's limit (a quarter of it, at least the minimum the
# threads need; docs/tuning.md), and one stream of a file bigger than the
# limit, then 64 slow streams (4 KiB reads at 512 KiB/s each) of it, are
# read correctly to the last byte with no OOM kill in the cgroup
# (memory.oom_control: oom_kill 0).  The cgroup's peak usage
# (memory.max_usage_in_bytes) is printed.  In a 3 GiB cgroup the mount's
# read_ahead_kb is the limit / 8192.
#
# AFS_MEMLIMIT_CACHE=SIZE mounts with -o cache_size=SIZE instead of the
# default (3G shows the OOM kill of a budget that ignores the cgroup).
# Skipped without a writable cgroup v1 memory controller.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root

ac_memcg_home # CG_HOME, or the test is skipped

# Cgroups of earlier runs that failed (a cgroup can be removed only once
# its processes are gone, after this script's own cleanup).
for cg in "$CG_HOME"/afs-memlimit.*; do
	[ -d "$cg" ] || continue
	pid=${cg##*/afs-memlimit.}
	pid=${pid%%.*}
	kill -0 "$pid" 2>/dev/null || rmdir "$cg" 2>/dev/null || true
done

# A sanitizer build's own memory (ASan's quarantine holds 256 MiB of freed
# blocks by default) is not the daemon's: keep it small.
if [ -n "${AFS_SANITIZE:-}" ]; then
	export ASAN_OPTIONS=${ASAN_OPTIONS:-}:quarantine_size_mb=4:malloc_context_size=5
fi

afs_loop_ext4 512
BIG=288M
"$AC_IO" fill "$AFS_SRC/big" "$BIG" 7 || afs_fail "fill"
sync

# One run: a fresh cgroup of $1 MiB holding a subshell that mounts the
# daemon in read mode $2, reads, and unmounts; then the cgroup's record.
cgs=()
run_in_cgroup()
{
	local mib=$1 mode=$2 cg rc=0 oom peak
	cg=$CG_HOME/afs-memlimit.$$.$mib.$mode
	mkdir "$cg"
	cgs+=("$cg")
	echo "${mib}M" >"$cg/memory.limit_in_bytes"
	(
		echo "$BASHPID" >"$cg/cgroup.procs"
		mkdir -p "$AFS_WORK/mnt.$mib.$mode"
		AFS_MNT=$AFS_WORK/mnt.$mib.$mode
		afs_mount -o "read_mode=$mode${AFS_MEMLIMIT_CACHE:+,cache_size=$AFS_MEMLIMIT_CACHE}"
		size=$(ac_get "$(ac_stats "$AFS_MNT")" options.cache_size)
		echo "$mib MiB $mode: cache budget $((size >> 20)) MiB"
		if [ -z "${AFS_MEMLIMIT_CACHE:-}" ] &&
			[ "$size" -gt $(((mib << 20) / 2)) ]; then
			afs_fail "default cache_size $size in a $mib MiB cgroup"
		fi
		"$AC_IO" check "$AFS_MNT/big" 7 1M ||
			afs_fail "$mib MiB $mode: the big stream"
		"$AC_IO" slow "$AFS_MNT/big" 7 64 4K 512K 4 ||
			afs_fail "$mib MiB $mode: 64 slow streams"
		afs_umount
	) || rc=$?
	oom=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.oom_control")
	peak=$(cat "$cg/memory.max_usage_in_bytes")
	echo "$mib MiB $mode: peak usage $((peak >> 20)) MiB, oom_kill $oom"
	[ "$oom" = 0 ] || afs_fail "$mib MiB $mode: the OOM killer ran ($oom)"
	[ "$rc" -eq 0 ] || afs_fail "$mib MiB $mode: the run failed ($rc)"
}

# The kernel's readahead on the mount follows the limit (docs/tuning.md,
# afs_mount_readahead()): its 8192nd, at least 128 KiB, at most 512 KiB.  A
# 3 GiB cgroup gives 384 KiB, which is neither the kernel's own default for
# FUSE (128) nor the daemon's value without a limit (512).
check_mount_readahead()
{
	local cg rc=0
	cg=$CG_HOME/afs-memlimit.$$.ra
	mkdir "$cg"
	cgs+=("$cg")
	echo 3G >"$cg/memory.limit_in_bytes"
	(
		echo "$BASHPID" >"$cg/cgroup.procs"
		mkdir -p "$AFS_WORK/mnt.ra"
		AFS_MNT=$AFS_WORK/mnt.ra
		afs_mount
		stat "$AFS_MNT/big" >/dev/null # the daemon's first request
		dev=$(findmnt -no MAJ:MIN "$AFS_MNT" | tr -d " ")
		kb=$(cat "/sys/class/bdi/$dev/read_ahead_kb")
		echo "3 GiB: the mount's read_ahead_kb $kb"
		[ "$kb" = 384 ] || afs_fail "read_ahead_kb $kb in a 3 GiB cgroup, not 384"
		afs_umount
	) || rc=$?
	[ "$rc" -eq 0 ] || afs_fail "the mount's readahead: the run failed ($rc)"
}

cleanup_cgroups()
{
	local cg
	for cg in "${cgs[@]}"; do
		rmdir "$cg" 2>/dev/null || true
	done
}

sizes="256 64"
if [ -n "${AFS_SANITIZE:-}" ]; then
	# Measured: ASan adds about 35 MiB to the daemon (shadow, redzones,
	# fake stacks), which a 64 MiB cgroup cannot hold beside the budget.
	echo "sanitizer build ($AFS_SANITIZE): the 64 MiB cgroup is left to" \
		"the build without sanitizers"
	sizes=256
fi
check_mount_readahead
for mib in $sizes; do
	for mode in kernel direct; do
		run_in_cgroup "$mib" "$mode"
	done
done
cleanup_cgroups
