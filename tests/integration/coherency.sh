#!/usr/bin/env bash
# coherency.sh - close-to-open consistency with the backing, as NFS gives:
# a file changed behind the mount (by a process writing SOURCE directly) is
# read correctly by the next open through the mount, whether it was
# rewritten in place at the same size, appended to, truncated, or rewritten
# with its mtime put back (ctime still moves); and writes through the mount
# reach the backing before close (write-through), so readers of the backing
# see them at once.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
F=$AFS_SRC/f
M=$AFS_MNT/f
head -c 3M /dev/urandom >"$F"
afs_mount

check()
{
	cmp "$F" "$M" >/dev/null || afs_fail "after $1, the mount serves stale data"
	[ "$(stat -c %s "$M")" = "$(stat -c %s "$F")" ] || afs_fail "after $1, size differs"
}

cat "$M" >/dev/null # the kernel (and the daemon) may now cache it
head -c 3M /dev/urandom >"$AFS_WORK/new"
dd if="$AFS_WORK/new" of="$F" conv=notrunc status=none
check "an in-place rewrite of the same size"
head -c 100000 /dev/urandom >>"$F"
check "an append"
cat "$M" >/dev/null
truncate -s 1000000 "$F"
check "a truncate"
cat "$M" >/dev/null
touch -d '2001-01-01' "$F"
cat "$M" >/dev/null
dd if=/dev/urandom of="$F" bs=4096 count=10 seek=5 conv=notrunc status=none
touch -d '2001-01-01' "$F" # mtime as before; ctime moved
check "a rewrite with the mtime restored"

# Write-through: the backing has the bytes while the file is still open.
python3 - "$M" "$F" <<'PY'
import os, sys
mnt, src = sys.argv[1], sys.argv[2]
fd = os.open(mnt, os.O_WRONLY)
data = os.urandom(200000)
os.pwrite(fd, data, 12345)
with open(src, "rb") as f:
    f.seek(12345)
    got = f.read(len(data))
os.close(fd)
if got != data:
    sys.exit("write through the mount not on the backing before close")
PY
afs_umount
