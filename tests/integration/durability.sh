#!/usr/bin/env bash
# durability.sh - fsync(2) and fdatasync(2) through the mount reach the
# backing device before they return, in both write modes, and a failed
# backing flush is never reported as success.  The daemon runs with the
# test-only fault shim (libafs_fault.so), which delays the backing's fsync
# and fdatasync by 300 ms and records when each real call returned:
#   1. the application's fsync and fdatasync each take at least the delay,
#      and the backing's call returned before the application's did (the
#      reply waited for it): ordered by CLOCK_MONOTONIC across processes;
#   2. the loop device's flush count (/sys/block/loopN/stat, field 16)
#      advances across each call, and the backing holds the bytes;
#   3. with the backing's fsync failing (EIO), the application's fsync
#      fails with EIO, in writeback mode too (its data may still sit in
#      the kernel: the error must not be lost).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_require_root
SHIM=$(realpath "$AFS_TESTBIN/libafs_fault.so" 2>/dev/null) ||
	afs_fail "libafs_fault.so not built"
afs_loop_ext4 128
CTL=$AFS_WORK/faults
dev=$(basename "$AFS_LOOPDEV")
rules()
{
	printf '%s\n' "$@" >"$CTL.new"
	mv "$CTL.new" "$CTL"
}

for mode in writethrough writeback; do
	rules "sync /f.$mode 0 -1 delay 300"
	: >"$CTL.hits"
	LD_PRELOAD=$SHIM AFS_FAULT_CTL=$CTL \
		ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0 \
		afs_mount -o write_mode=$mode
	python3 - "$AFS_MNT/f.$mode" "$AFS_SRC/f.$mode" "$CTL.hits" \
		"/sys/block/$dev/stat" "$mode" <<'PY'
import os, sys, time
mnt, src, hits, stat, mode = sys.argv[1:6]
def fail(msg):
    sys.exit("%s: %s" % (mode, msg))
def flushes():
    f = open(stat).read().split()
    return int(f[15]) if len(f) > 15 else -1
data = os.urandom(1 << 20)
fd = os.open(mnt, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
for call in (os.fsync, os.fdatasync):
    os.pwrite(fd, data, 0)
    before = flushes()
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    call(fd)
    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    after = flushes()
    done = [int(l.split()[2]) for l in open(hits) if l.startswith("synced ")]
    done = [d for d in done if t0 <= d]
    print("%s %s: %.0f ms, backing done %s ms after the call, flushes %d -> %d"
          % (mode, call.__name__, (t1 - t0) / 1e6,
             ["%.0f" % ((d - t0) / 1e6) for d in done], before, after))
    if t1 - t0 < 300e6:
        fail("%s returned in %.0f ms: before the backing's" % (call.__name__, (t1 - t0) / 1e6))
    if not done or min(done) > t1:
        fail("%s returned before the backing's call did" % call.__name__)
    if before >= 0 and after <= before:
        fail("%s did not flush the device (%d -> %d)" % (call.__name__, before, after))
    if open(src, "rb").read() != data:
        fail("after %s the backing lacks the bytes" % call.__name__)
os.close(fd)
PY
	rules "sync /f.$mode 0 -1 eio"
	python3 - "$AFS_MNT/f.$mode" "$mode" <<'PY'
import errno, os, sys
mnt, mode = sys.argv[1:3]
fd = os.open(mnt, os.O_WRONLY)
os.pwrite(fd, b"x" * 4096, 0)
try:
    os.fsync(fd)
except OSError as e:
    if e.errno != errno.EIO:
        sys.exit("%s: fsync failed with %s, not EIO" % (mode, e))
    print("%s: a failed backing fsync: EIO" % mode)
else:
    sys.exit("%s: fsync returned 0 while the backing's failed" % mode)
os.close(fd)
PY
	rules
	afs_umount
done
echo "durability: ok"
