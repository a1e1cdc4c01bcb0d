#!/usr/bin/env bash
# write_capability.sh - the security.capability question the kernel asks
# before every write(2) is answered without a backing call once the file is
# known to have none, and the answer never goes stale through the mount:
#   1. 2000 writes of 4 KiB cost the daemon at most a handful of getxattr
#      system calls (counted with strace on the daemon), and the bytes land;
#   2. a capability set through the mount is seen at once, and the kernel's
#      kill-privilege on the next write by root removes it, as on the backing;
#   3. a capability set behind the mount is seen once the daemon notices the
#      change: an entry or attribute reply after their timeouts (the names'
#      0.2 s ends first, so the kernel asks with LOOKUP, not GETATTR);
#   4. the kernel asks at all only once per file: with handle_killpriv_v2
#      negotiated (fs/fuse/devio.c) 2000 writes send at most a handful of
#      GETXATTR requests (counted in the daemon's -d log), in both write
#      modes, where libfuse 3.14 alone would send one per write(2).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_require_root
command -v strace >/dev/null || afs_fail "strace is not installed"
command -v setcap >/dev/null || afs_fail "setcap (libcap2-bin) is not installed"
afs_loop_ext4 128
afs_mount -o attr_timeout=0.5,entry_timeout=0.2
F=$AFS_SRC/f
M=$AFS_MNT/f
head -c 1M /dev/urandom >"$F"
head -c 8M /dev/urandom >"$AFS_WORK/data"

getxattrs_during()
{
	local log=$AFS_WORK/strace.$1
	shift
	strace -f -qq -e trace=getxattr,lgetxattr,fgetxattr -o "$log" -p "$AFS_PID" &
	local st=$!
	sleep 0.5 # attached to every thread
	"$@"
	sleep 0.2
	kill -INT "$st"
	wait "$st" 2>/dev/null || true
	grep -c 'security.capability' "$log" || true
}

# 1. Many writes, few backing calls.
n=$(getxattrs_during writes dd if="$AFS_WORK/data" of="$M" bs=4k count=2000 conv=notrunc status=none)
echo "getxattr(security.capability) calls for 2000 writes: $n"
[ "$n" -le 5 ] || afs_fail "2000 writes cost $n backing getxattr calls"
cmp -n 8192000 "$AFS_WORK/data" "$F" || afs_fail "the writes did not land"

# 2. Set through the mount: seen at once; a write by root then drops it
# (the kernel's kill-privilege), exactly as the backing does for root.
setcap cap_net_raw+ep "$M"
getcap "$M" | grep -q cap_net_raw || afs_fail "a capability set through the mount is not seen"
getcap "$F" | grep -q cap_net_raw || afs_fail "the capability did not reach the backing"
cp "$F" "$AFS_WORK/ref"
setcap cap_net_raw+ep "$AFS_WORK/ref"
printf x | dd of="$AFS_WORK/ref" bs=1 seek=10 conv=notrunc status=none
printf x | dd of="$M" bs=1 seek=10 conv=notrunc status=none
want=$(getcap "$AFS_WORK/ref" | wc -l)
got=$(getcap "$F" | wc -l)
seen=$(getcap "$M" | wc -l)
[ "$want" = "$got" ] ||
	afs_fail "after a write by root: $want capability lines on a backing copy, $got on the file written through the mount"
[ "$seen" = "$got" ] ||
	afs_fail "after a write by root the mount reports $seen capability lines, the backing $got"

# 3. Set behind the mount: seen after the daemon notices the change.
getcap "$M" >/dev/null # the mount knows "no capability" again
setcap cap_net_admin+ep "$F"
sleep 0.6 # past attr_timeout: the next stat reaches the daemon
stat "$M" >/dev/null
getcap "$M" | grep -q cap_net_admin ||
	afs_fail "a capability set behind the mount is not seen after a getattr"
afs_umount

# 4. GETXATTR requests per write(2), from the daemon's own request log.
for wm in writethrough writeback; do
	afs_mount -d -o write_mode=$wm
	dd if="$AFS_WORK/data" of="$AFS_MNT/v2.$wm" bs=4k count=2000 status=none
	sync "$AFS_MNT/v2.$wm"
	n=$(grep -c "opcode: GETXATTR " "$AFS_LOG" || true)
	w=$(grep -c "opcode: WRITE " "$AFS_LOG" || true)
	echo "$wm: 2000 write(2) calls sent $w WRITE and $n GETXATTR requests"
	if grep -q "handle_killpriv_v2" "$AFS_LOG"; then
		[ "$n" -le 5 ] || afs_fail "$wm: 2000 writes sent $n GETXATTR requests with handle_killpriv_v2"
	else
		minor=$(sed -n 's/.*protocol 7\.\([0-9]*\).*/\1/p' "$AFS_LOG" | head -n1)
		[ -n "$minor" ] && [ "$minor" -lt 33 ] ||
			afs_fail "$wm: the kernel speaks protocol 7.$minor but handle_killpriv_v2 was not negotiated"
		echo "$wm: protocol 7.$minor has no handle_killpriv_v2: one GETXATTR per write(2)"
	fi
	cmp "$AFS_MNT/v2.$wm" <(head -c 8192000 "$AFS_WORK/data") || afs_fail "$wm: the writes did not land"
	afs_umount
done
echo "write_capability: ok"
