#!/usr/bin/env bash
# soak.sh - a bounded soak through a real mount, in each read mode
# (kernel, direct), on an ext4 volume, with a cache smaller than the files
# read (so the reclaimer evicts all the time): afs_soak runs every read
# pattern (sequential, random, threads on one fd, open per request,
# interleaved streams), writes, truncates, renames, xattrs, user.aheadfs.*
# stats, map and advice, and tunable changes through setxattr, every byte
# read checked (soak.c); meanwhile aheadfs-stat reads the mount's and a
# file's stats in a loop.  Then: the daemon is alive and mounted, every
# regular file read through the mount equals the backing's, and the daemon
# unmounts and exits 0 with a clean log -- in the ASan build that is "no
# sanitizer report and no leak" (LeakSanitizer reports at exit and makes
# the exit status non-zero).
# Knobs: AFS_SOAK_S (seconds per read mode, default 16), AFS_SEED.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_require_root
: "${AHEADFS_STAT:?AHEADFS_STAT must name aheadfs-stat (ctest sets it)}"

secs=${AFS_SOAK_S:-16}
seed=${AFS_SEED:-$(date +%s)}
echo "soak: seed $seed, ${secs}s per read mode"
# The sanitizer the verdict is about must be in the daemon.
if [[ ${AFS_SANITIZE:-} == *address* ]]; then
	# (Not "ldd | grep -q": grep's early exit can kill ldd with SIGPIPE,
	# which pipefail turns into a failure.)
	libs=$(ldd "$AHEADFS") || afs_fail "ldd $AHEADFS failed"
	[[ $libs == *libasan* ]] || afs_fail "$AHEADFS carries no ASan"
fi
afs_loop_ext4 512

stat_loop()
{
	local n=0
	until [ -e "$AFS_SRC/x0" ]; do sleep 0.1; done
	while [ ! -e "$AFS_WORK/soak.done" ]; do
		"$AHEADFS_STAT" --json "$AFS_MNT" >/dev/null ||
			{ echo "aheadfs-stat --json $AFS_MNT failed" >&2; return 1; }
		"$AHEADFS_STAT" "$AFS_MNT/r0" >/dev/null ||
			{ echo "aheadfs-stat $AFS_MNT/r0 failed" >&2; return 1; }
		n=$((n + 1))
	done
	echo "aheadfs-stat: $n rounds"
	[ "$n" -gt 0 ]
}

for mode in kernel direct; do
	afs_mount -o "read_mode=$mode,cache_size=32M"
	rm -f "$AFS_WORK/soak.done"
	stat_loop &
	statpid=$!
	rc=0
	"$AFS_TESTBIN/afs_soak" "$AFS_MNT" "$AFS_SRC" "$secs" "$seed" || rc=$?
	touch "$AFS_WORK/soak.done"
	src=0
	wait "$statpid" || src=$?
	kill -0 "$AFS_PID" 2>/dev/null || {
		_afs_show_log "$AFS_LOG"
		afs_fail "$mode: the daemon died during the soak"
	}
	afs_is_mounted "$AFS_MNT" || afs_fail "$mode: no longer mounted"
	[ "$rc" -eq 0 ] || afs_fail "$mode: afs_soak failed ($rc, seed $seed)"
	[ "$src" -eq 0 ] || afs_fail "$mode: aheadfs-stat failed during the soak"
	# Integrity: every file through the mount holds the backing's bytes.
	n=0
	while IFS= read -r -d '' f; do
		cmp "$AFS_SRC/$f" "$AFS_MNT/$f" ||
			afs_fail "$mode: $f differs through the mount"
		n=$((n + 1))
	done < <(cd "$AFS_SRC" && find . -type f -print0)
	[ "$n" -ge 7 ] || afs_fail "$mode: only $n files to compare"
	echo "$mode: $n files equal through the mount and on the backing"
	# The cache was under pressure all along: it evicted.
	ev=$(getfattr -n user.aheadfs.stats --only-values "$AFS_MNT" 2>/dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["cache"]["evictions"])')
	echo "$mode: $ev pages evicted"
	[ "$ev" -gt 0 ] || afs_fail "$mode: the cache never evicted"
	afs_umount
done
