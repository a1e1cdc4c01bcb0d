#!/usr/bin/env bash
# integrity.sh - seeded random writes, truncates, reads, renames and fsyncs
# through the mount agree with an in-memory model after every read and with
# the backing files at the end (afs_integrity), on a plain directory and on
# an ext4 loop volume, with and without mmap mixed in.  The seed is printed;
# AFS_SEED=N replays a run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
seed=${AFS_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
[ "$seed" -ne 0 ] || seed=1
echo "integrity: seed $seed (replay with AFS_SEED=$seed)"
I=$AFS_TESTBIN/afs_integrity

run()
{
	local dir=$1
	shift
	mkdir "$AFS_SRC/$dir"
	"$I" -s "$seed" "$@" "$AFS_MNT/$dir" "$AFS_SRC/$dir" ||
		afs_fail "integrity run '$dir' failed (seed $seed, options $*)"
}

afs_mount
run plain -n 6000 -f 4
run mmap -n 4000 -f 3 -m
# Two at once (different files, different seeds): the daemon's threads
# serve both.
mkdir "$AFS_SRC/par1" "$AFS_SRC/par2"
"$I" -s "$seed" -n 4000 -f 3 "$AFS_MNT/par1" "$AFS_SRC/par1" &
p1=$!
"$I" -s "$((seed + 1))" -n 4000 -f 3 -m "$AFS_MNT/par2" "$AFS_SRC/par2" &
p2=$!
wait "$p1" || afs_fail "parallel run 1 failed (seed $seed)"
wait "$p2" || afs_fail "parallel run 2 failed (seed $((seed + 1)), -m)"
afs_umount

afs_loop_ext4 128
afs_mount
run ext4 -n 6000 -f 4 -z 8388608
run ext4-mmap -n 3000 -f 2 -m
afs_umount
