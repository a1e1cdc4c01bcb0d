#!/usr/bin/env bash
# write_behind.sh - write-behind (-o write_behind=, fs/data/behind.c), in
# both write modes, over a real ext4 volume, the backing file's own page
# cache read with cachestat(2):
#   - a file written sequentially (64 MiB, 64 KiB writes, no fsync) has its
#     finished pieces handed to the backing's writeback as they are written:
#     the mount counts them (writes.behind_pieces, behind_bytes), and at
#     most the last piece of the backing file is still dirty when the writer
#     is done;
#   - with write_behind=0 the same file is left dirty (the control: the
#     kernel's own writeback would start later), no piece counted;
#   - random writes, a region rewritten in place and O_DSYNC writes hand
#     over nothing (write-through; with the writeback cache the kernel
#     sends its dirty pages in file order);
#   - every byte is right, and fsync still reports success only once the
#     backing has the bytes (durability.sh checks its errors).
# With passthrough=off: write-behind is the daemon's, on the writes it
# makes; a passthrough writer's bytes go to the backing without it.
# Skipped where the kernel has no cachestat(2) (before 6.5).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root

ac_require_cachestat

afs_loop_ext4 512
# The kernel's own writeback must not start during the test for the control
# to mean anything: its background threshold (a tenth of available memory
# by default) must be far above the 64 MiB written.
bg=$(cat /proc/sys/vm/dirty_background_bytes)
[ "$bg" -ne 0 ] || bg=$(awk -v r="$(cat /proc/sys/vm/dirty_background_ratio)" \
	'/^MemAvailable:/ { printf "%d", $2 * 1024 * r / 100 }' /proc/meminfo)
control=1
[ "$bg" -ge $((256 << 20)) ] || {
	control=0
	echo "the kernel's background writeback starts at $((bg >> 20)) MiB: control not checked"
}

MIB=$((1 << 20))
writes() { # JSON -> "pieces bytes skipped failed"
	python3 -c 'import json, sys
w = json.loads(sys.argv[1])["writes"]
print(w["behind_pieces"], w["behind_bytes"], w["behind_skipped"], w["behind_failed"])' "$1"
}
# Wait until the mount's counted bytes reach $1 (the queue drained), at most
# 10 s; print the counters.
wait_bytes()
{
	local want=$1 i w
	for ((i = 0; i < 100; i++)); do
		w=$(writes "$(ac_stats "$AFS_MNT")")
		set -- $w
		[ "$2" -lt "$want" ] || break
		sleep 0.1
	done
	echo "$w"
}

run_mode() { # WRITE_MODE
	local wm=$1 f w c
	AC_MODE=$wm
	afs_mount -o write_mode="$wm",passthrough=off

	# Sequential: 8 pieces of 8 MiB.
	f=seq.$wm
	head -c $((64 * MIB)) /dev/urandom >"$AFS_WORK/want"
	dd if="$AFS_WORK/want" of="$AFS_MNT/$f" bs=64K status=none
	w=$(wait_bytes $((56 * MIB)))
	c=$(ac_cachestat "$AFS_SRC/$f")
	echo "$wm sequential 64 MiB: behind pieces/bytes/skipped/failed $w;" \
		"backing cached/dirty/writeback pages $c"
	set -- $w
	# (In writeback mode the kernel's requests come in bursts, and one
	# hand-over may take more than one piece.)
	[ "$1" -ge 1 ] && [ "$2" -ge $((56 * MIB)) ] ||
		afs_fail "$wm: a sequential 64 MiB file handed over $1 pieces, $2 bytes (want >= 56 MiB)"
	[ "$4" -eq 0 ] || afs_fail "$wm: $4 sync_file_range() calls failed"
	set -- $c
	[ "$2" -le $((8 * MIB / 4096)) ] ||
		afs_fail "$wm: $2 pages of the backing file still dirty (at most one 8 MiB piece expected)"
	cmp "$AFS_MNT/$f" "$AFS_WORK/want" || afs_fail "$wm: the written file reads back wrong"
	cmp "$AFS_SRC/$f" "$AFS_WORK/want" || afs_fail "$wm: the backing has wrong bytes"
	before=$(writes "$(ac_stats "$AFS_MNT")")

	# Random 64 KiB writes over a 64 MiB file, each offset once, no two
	# consecutive ones next to each other; a 4 MiB region rewritten 32
	# times; O_DSYNC writes.  Write-through only: with the writeback
	# cache the kernel absorbs the rewrites and sends its dirty pages in
	# file order, so what reaches aheadfs is sequential there.
	[ "$wm" = writethrough ] || { afs_umount; control "$wm"; return; }
	python3 - "$AFS_MNT/rnd.$wm" "$AFS_MNT/rew.$wm" <<'PY'
import os, random, sys
bs = 64 << 10
offs = list(range(0, 64 << 20, bs))
random.seed(7)
while True:
    random.shuffle(offs)
    if all(abs(a - b) > 2 * bs for a, b in zip(offs, offs[1:])):
        break
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
buf = os.urandom(bs)
for o in offs:
    os.pwrite(fd, buf, o)
os.close(fd)
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for _ in range(32):
    for o in range(0, 4 << 20, bs):
        os.pwrite(fd, buf, o)
os.close(fd)
PY
	dd if="$AFS_WORK/want" of="$AFS_MNT/dsync.$wm" bs=64K oflag=dsync status=none
	sleep 0.5
	w=$(writes "$(ac_stats "$AFS_MNT")")
	echo "$wm random, rewritten, O_DSYNC: behind $w (before: $before)"
	[ "${w%% *}" = "${before%% *}" ] ||
		afs_fail "$wm: random, rewritten or O_DSYNC writes were handed over ($before -> $w)"
	cmp "$AFS_MNT/dsync.$wm" "$AFS_WORK/want" || afs_fail "$wm: O_DSYNC file reads back wrong"
	afs_umount
	control "$wm"
}

control() { # WRITE_MODE
	local wm=$1 f w c try
	# The control: write_behind=0.  A sync(2) elsewhere on the machine
	# (another test) would clean the file too: up to three tries.
	afs_mount -o write_mode="$wm",write_behind=0,passthrough=off
	for try in 1 2 3; do
		f=off.$wm.$try
		dd if="$AFS_WORK/want" of="$AFS_MNT/$f" bs=64K status=none
		w=$(writes "$(ac_stats "$AFS_MNT")")
		c=$(ac_cachestat "$AFS_SRC/$f")
		echo "$wm write_behind=0: behind $w; backing cached/dirty/writeback pages $c"
		[ "${w%% *}" -eq 0 ] || afs_fail "$wm: write_behind=0 handed over pieces: $w"
		cmp "$AFS_SRC/$f" "$AFS_WORK/want" ||
			afs_fail "$wm: the backing has wrong bytes (write_behind=0)"
		set -- $c
		[ "$control" -eq 0 ] || [ "$2" -lt $((48 * MIB / 4096)) ] || break
		[ "$try" -lt 3 ] ||
			afs_fail "$wm: without write-behind only $2 pages were dirty: the test cannot tell the two apart"
		# Room for the next try: the volume holds a few such files only.
		rm -f "$AFS_MNT/$f"
	done
	afs_umount
}

run_mode writethrough
run_mode writeback
echo "write_behind: ok"
