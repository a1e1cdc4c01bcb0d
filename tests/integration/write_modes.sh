#!/usr/bin/env bash
# write_modes.sh - writes in both write modes (-o write_mode=writethrough, the
# default, and writeback), each over a small real ext4 volume:
#   - O_APPEND writes land at the end, in order (in writeback mode the
#     backing descriptor has no O_APPEND: the kernel computes the offsets);
#   - a caller allowed only to write (mode 0222) writes part of a page: the
#     page is read back and the bytes around the write survive;
#   - fsync reaches the backing: the device's flush count
#     (/sys/block/loopN/stat, field 16: flush I/Os) moves, and the backing has the bytes;
#   - a reader of another open (direct mode) sees the writer's bytes before
#     any fsync, and reads after writes never return stale pages;
#   - the mount's own writes are not taken for changes behind the mount
#     (the file's revalidations stay 0);
#   - ENOSPC: in writethrough mode write(2) fails with it and claims nothing
#     past what the backing took; in writeback mode fsync() or close() fails
#     with it, never returning 0 for bytes that were not written (also with
#     direct writes, write_direct=256K, the writeback mode run once more).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root
afs_test_user

run_mode() { # WRITE_MODE [OPTS]
	local wm=$1 more=${2:+,$2}
	AFS_SRC=$AFS_EXT4/src.$wm$more
	mkdir -p "$AFS_SRC"
	chmod 0777 "$AFS_SRC"
	AFS_MNT=$AFS_WORK/mnt.$wm$more
	mkdir -p "$AFS_MNT"
	afs_mount -o "allow_other,read_mode=direct,write_mode=$wm$more"
	local M=$AFS_MNT S=$AFS_SRC dev
	dev=$(basename "$AFS_LOOPDEV")

	python3 - "$M" "$S" "$wm" "/sys/block/$dev/stat" <<'PY'
import errno, json, os, sys
mnt, src, wm, devstat = sys.argv[1:5]

def fail(msg):
    sys.exit("FAIL: write_modes [%s]: %s" % (wm, msg))

def flushes():
    f = open(devstat).read().split()
    return int(f[15]) if len(f) > 15 else -1

# O_APPEND, in order, from two descriptors.
p = os.path.join(mnt, "log")
a = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
b = os.open(p, os.O_WRONLY | os.O_APPEND)
want = b""
for i in range(200):
    chunk = (b"a%03d-" % i) * (1 + i % 7)
    os.write(a if i % 2 else b, chunk)
    want += chunk
os.fsync(a); os.close(a); os.close(b)
if open(os.path.join(src, "log"), "rb").read() != want:
    fail("O_APPEND writes did not land at the end, in order")

# fsync reaches the device.
p = os.path.join(mnt, "durable")
fd = os.open(p, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
os.write(fd, os.urandom(3 << 20))
before = flushes()
os.fsync(fd)
after = flushes()
if before >= 0 and after <= before:
    fail("fsync did not flush the backing device (%d -> %d)" % (before, after))
if os.path.getsize(os.path.join(src, "durable")) != 3 << 20:
    fail("after fsync the backing lacks bytes")
os.close(fd)

# Another open's reader (direct_io) sees the writes before any fsync, and
# never a stale page after a rewrite.
p = os.path.join(mnt, "shared")
w = os.open(p, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
os.write(w, b"A" * 10000)
r = os.open(p, os.O_RDONLY)
if os.pread(r, 10, 9990) != b"A" * 10:
    fail("a reader does not see another open's unflushed writes")
for i in range(50):
    data = bytes([65 + i % 26]) * 100
    os.pwrite(w, data, 4000 + i * 37)
    if os.pread(r, 100, 4000 + i * 37) != data:
        fail("a read after a write returned stale bytes (round %d)" % i)
os.close(w); os.close(r)

# The mount's own writes are no change behind the mount.
v = os.getxattr(p, "user.aheadfs.stats")
if json.loads(v)["revalidations"] != 0:
    fail("the mount's own writes were taken for changes behind it")
PY

	# Write-only caller, partial pages: the bytes around each write survive.
	head -c 20000 /dev/urandom >"$S/wo"
	chmod 0222 "$S/wo"
	cp "$S/wo" "$AFS_WORK/wo.ref"
	afs_as_user python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
for off in (5, 4090, 9000, 19999):
    os.pwrite(fd, b"xyz", off)
os.close(fd)' "$M/wo" || afs_fail "[$wm] a write-only caller's partial-page writes failed"
	python3 - "$AFS_WORK/wo.ref" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
for off in (5, 4090, 9000, 19999):
    b[off:off + 3] = b"xyz"
open(p, "wb").write(bytes(b))
PY
	sync
	cmp "$S/wo" "$AFS_WORK/wo.ref" || afs_fail "[$wm] partial-page writes by a write-only caller lost bytes"

	# ENOSPC: fill the volume through the mount.
	python3 - "$M/fill" "$S/fill" "$wm" <<'PY'
import errno, os, sys
p, backing, wm = sys.argv[1:4]
fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
buf = b"z" * (1 << 20)
claimed = 0
err = None
try:
    for _ in range(200):  # far past the 48 MiB volume
        claimed += os.write(fd, buf)
    os.fsync(fd)
except OSError as e:
    err = e.errno
try:
    os.close(fd)
except OSError as e:
    err = err or e.errno
if err != errno.ENOSPC:
    sys.exit("FAIL: write_modes [%s]: filling the volume gave %s, not ENOSPC" %
             (wm, errno.errorcode.get(err, err)))
real = os.path.getsize(backing)
if wm == "writethrough" and claimed > real:
    sys.exit("FAIL: write_modes [writethrough]: write() claimed %d bytes, the backing has %d" %
             (claimed, real))
print("[%s] ENOSPC reported; write() claimed %d MiB, backing holds %d MiB" %
      (wm, claimed >> 20, real >> 20))
PY
	# With write_direct= the kernel's 1 MiB requests went with O_DIRECT
	# (write_direct.sh): the error above is that path's.
	if [ -n "$more" ]; then
		ac_assert "$(ac_stats "$M")" "g('writes.direct_writes') >= 1" \
			"[$wm] no write of the fill went direct"
	fi
	rm -f "$M/fill"
	afs_umount
}

afs_loop_ext4 48
run_mode writethrough
run_mode writeback
run_mode writeback write_direct=256K
echo "write_modes: ok"
