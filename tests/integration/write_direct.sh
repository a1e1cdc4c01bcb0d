#!/usr/bin/env bash
# write_direct.sh - direct writes (-o write_direct=256K, fs/data/write.c;
# off by default): in writeback mode the kernel's large requests reach the
# backing with O_DIRECT, over a real ext4 volume, the backing file's own page cache read
# with cachestat(2):
#   - a file written through the mount (64 MiB in 64 KiB writes, fsync) is
#     counted in writes.direct_writes and direct_bytes, and the backing's
#     page cache holds almost none of it; every byte is right on the
#     backing and through a fresh mount, and so is a file whose size ends
#     inside a page (its last request is buffered);
#   - the controls: the default (off), and write-through mode (where a
#     writer waits on every write) count nothing and leave the file cached;
#   - (ENOSPC on the direct path: write_modes.sh, whose writeback-mode fill
#     checks that direct writes reached the backing before the error);
#   - a backing that refuses O_DIRECT (ramfs, at open), and one whose direct
#     writes fail with EINVAL (the fault shim): the writes are buffered, the
#     file is counted once in direct_refused, every byte is right.
# Skipped where the kernel has no cachestat(2) (before 6.5).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root
ac_require_cachestat

MIB=$((1 << 20))
writes() { # JSON -> "direct_writes direct_bytes direct_refused"
	python3 -c 'import json, sys
w = json.loads(sys.argv[1])["writes"]
print(w["direct_writes"], w["direct_bytes"], w["direct_refused"])' "$1"
}

afs_loop_ext4 256
head -c $((64 * MIB)) /dev/urandom >"$AFS_WORK/want"
head -c $((5 * MIB + 1000)) /dev/urandom >"$AFS_WORK/tail"

# write OPTS NAME: 64 MiB through the mount in 64 KiB writes and an fsync,
# and the odd-sized file; prints "writes... cached-pages".
write() {
	local opts=$1 f=$2 w c
	afs_mount -o "$opts"
	dd if="$AFS_WORK/want" of="$AFS_MNT/$f" bs=64K conv=fsync status=none
	dd if="$AFS_WORK/tail" of="$AFS_MNT/$f.tail" bs=64K conv=fsync status=none
	w=$(writes "$(ac_stats "$AFS_MNT")")
	afs_umount
	c=$(ac_cachestat "$AFS_SRC/$f")
	cmp "$AFS_SRC/$f" "$AFS_WORK/want" || afs_fail "$opts: the backing has wrong bytes"
	cmp "$AFS_SRC/$f.tail" "$AFS_WORK/tail" ||
		afs_fail "$opts: the backing has wrong bytes (the odd-sized file)"
	echo "$w ${c%% *}"
}

set -- $(write write_mode=writeback,write_direct=256K direct)
echo "writeback: direct writes $1, bytes $2, refused $3; backing pages cached $4"
[ "$1" -ge 64 ] && [ "$2" -ge $((60 * MIB)) ] ||
	afs_fail "writeback: $1 direct writes of $2 bytes for 64 MiB (want >= 60 MiB)"
[ "$3" -eq 0 ] || afs_fail "writeback: ext4 counted as refusing O_DIRECT"
[ "$4" -le $((4 * MIB / 4096)) ] ||
	afs_fail "writeback: $4 pages of the directly written file are in the backing's page cache"
# Read back through a fresh mount, both read modes.
for rm in kernel direct; do
	afs_mount -o read_mode=$rm
	cmp "$AFS_MNT/direct" "$AFS_WORK/want" || afs_fail "read_mode=$rm: the file reads back wrong"
	cmp "$AFS_MNT/direct.tail" "$AFS_WORK/tail" ||
		afs_fail "read_mode=$rm: the odd-sized file reads back wrong"
	afs_umount
done

for opts in write_mode=writeback write_mode=writethrough,write_direct=4K; do
	set -- $(write "$opts" "off.${opts//[=,]/_}")
	echo "$opts: direct writes $1; backing pages cached $4"
	[ "$1" -eq 0 ] || afs_fail "$opts: $1 writes went direct"
	[ "$4" -ge $((60 * MIB / 4096)) ] ||
		afs_fail "$opts: only $4 pages of a buffered file cached: the test cannot tell the two apart"
done

# Direct writes refused with EINVAL (opened fine): buffered from the first.
SHIM=$(realpath "$AFS_TESTBIN/libafs_fault.so" 2>/dev/null) ||
	afs_fail "libafs_fault.so not built"
CTL=$AFS_WORK/faults
printf '%s\n' "write /einval 0 -1 direct_einval" >"$CTL"
# refused LABEL NAME: 16 MiB written through the mount (already mounted)
# must all be buffered, the file counted once as refused, every byte right
# through the mount and on the backing; unmounts.
refused() {
	local label=$1 f=$2
	dd if="$AFS_WORK/want" of="$AFS_MNT/$f" bs=1M count=16 conv=fsync status=none
	set -- $(writes "$(ac_stats "$AFS_MNT")")
	echo "$label: direct writes $1, refused $3"
	[ "$1" -eq 0 ] && [ "$3" -eq 1 ] ||
		afs_fail "$label: $1 direct writes, $3 files refused (want 0 and 1)"
	cmp "$AFS_MNT/$f" <(head -c $((16 * MIB)) "$AFS_WORK/want") ||
		afs_fail "$label: the file reads back wrong"
	afs_umount
	cmp "$AFS_SRC/$f" <(head -c $((16 * MIB)) "$AFS_WORK/want") ||
		afs_fail "$label: the backing has wrong bytes"
}

LD_PRELOAD=$SHIM AFS_FAULT_CTL=$CTL \
	ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0 \
	afs_mount -o write_mode=writeback,write_direct=256K
refused "direct writes refused with EINVAL" einval

# A backing that refuses O_DIRECT.
AFS_SRC=$AFS_WORK/ramfs
mkdir -p "$AFS_SRC"
mount -t ramfs ramfs "$AFS_SRC" || afs_fail "mount -t ramfs failed"
afs_at_exit 'umount -l "$AFS_WORK/ramfs" 2>/dev/null || true'
afs_mount -o write_mode=writeback,write_direct=256K
refused ramfs r
echo "write_direct: ok"
