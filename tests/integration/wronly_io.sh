#!/usr/bin/env bash
# wronly_io.sh - write-only opens around the kernel's page cache
# (-o wronly_io=direct, the default in write-through mode; ops_open.c
# finish_open()), over a real ext4 volume, the mount's page cache read
# with cachestat(2):
#   - 32 MiB written through a write-only open leave (almost) nothing in
#     the mount's page cache; with wronly_io=cached, all of it; the bytes
#     are right either way;
#   - no stale page through the kernel's cache: a range read (cached) and
#     closed, then rewritten through a write-only open, reads back new
#     through a new open (the kernel drops the range before a direct
#     write); a reader holding its open reads every version a writer's
#     write(2) has returned, also while another thread reads the same range
#     in a loop and every backing write is held 20 ms (the fault shim): the
#     old bytes the loop finds meanwhile are gone once the write returns
#     (the kernel's doing, on the protocols wronly_io=direct is used on:
#     ops_init.c afs_op_init());
#   - O_APPEND writers through write-only opens keep every line.
# Skipped where the kernel has no cachestat(2) (before 6.5), or offers a
# protocol before 7.45 (write-only opens then stay cached: ops_init.c).
# With passthrough=off: passthrough (the default for writable opens)
# takes write-only opens past both ways (passthrough.sh tests it).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root
ac_require_cachestat
SHIM=$(realpath "$AFS_TESTBIN/libafs_fault.so" 2>/dev/null) ||
	afs_fail "libafs_fault.so not built"
CTL=$AFS_WORK/faults
printf '%s\n' "write /held 0 -1 delay 20" >"$CTL"

MIB=$((1 << 20))
afs_loop_ext4 256
head -c $((32 * MIB)) /dev/urandom >"$AFS_WORK/want"

for io in direct cached; do
	afs_mount -o wronly_io=$io,passthrough=off
	stat "$AFS_MNT" >/dev/null # INIT answered: its log line is out
	if [ $io = direct ] && grep -q "wronly_io=direct needs" "$AFS_LOG"; then
		afs_umount
		echo "SKIP: $AFS_TEST_NAME: the kernel's protocol is before 7.45:" \
			"write-only opens stay cached" >&2
		exit 77
	fi
	dd if="$AFS_WORK/want" of="$AFS_MNT/f.$io" bs=64K conv=fsync status=none
	set -- $(ac_cachestat "$AFS_MNT/f.$io")
	echo "wronly_io=$io: 32 MiB written, $1 pages in the mount's page cache"
	if [ $io = direct ]; then
		[ "$1" -le 256 ] || afs_fail "wronly_io=direct: $1 pages of a write-only open's file cached by the kernel"
	else
		[ "$1" -ge $((30 * MIB / 4096)) ] ||
			afs_fail "wronly_io=cached: only $1 pages cached: the test cannot tell the two apart"
	fi
	cmp "$AFS_MNT/f.$io" "$AFS_WORK/want" || afs_fail "wronly_io=$io: the file reads back wrong"
	cmp "$AFS_SRC/f.$io" "$AFS_WORK/want" || afs_fail "wronly_io=$io: the backing has wrong bytes"
	afs_umount
done

LD_PRELOAD=$SHIM AFS_FAULT_CTL=$CTL \
	ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0 afs_mount \
	-o passthrough=off
python3 - "$AFS_MNT/held" "$AFS_MNT/app.log" <<'PY'
import os, sys, threading
p, log = sys.argv[1:3]
R = 1 << 20
def fail(msg):
    sys.exit("FAIL: wronly_io: " + msg)
def version(v):
    return bytes([v % 251]) * R

# Read (cached) and closed, rewritten, read through a new open.
with open(p, "wb") as f:
    f.write(version(1))
for v in range(2, 12):
    fd = os.open(p, os.O_RDONLY)
    os.pread(fd, R, 0)
    os.close(fd)
    w = os.open(p, os.O_WRONLY)
    os.pwrite(w, version(v), 0)
    os.close(w)
    fd = os.open(p, os.O_RDONLY)
    got = os.pread(fd, R, 0)
    os.close(fd)
    if got != version(v):
        fail("a new open read version %d's range stale after version %d was written" % (got[0], v))

# A reader holding its open, and a thread reading the range in a loop.
rd = os.open(p, os.O_RDONLY)
w = os.open(p, os.O_WRONLY)
stop = False
def spin():
    fd = os.open(p, os.O_RDONLY)
    while not stop:
        os.pread(fd, R, 0)
    os.close(fd)
t = threading.Thread(target=spin)
t.start()
try:
    for v in range(12, 112):
        os.pread(rd, R, 0)
        os.pwrite(w, version(v), 0)
        got = os.pread(rd, R, 0)
        if got != version(v):
            fail("a held open read %d after version %d was written (round %d)" % (got[0], v % 251, v))
finally:
    stop = True
    t.join()
print("100 rewrites read back current through a held open")

# Appends through write-only opens.
procs = []
for k in range(4):
    pid = os.fork()
    if pid == 0:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        for i in range(500):
            os.write(fd, b"%d %03d\n" % (k, i))
        os.close(fd)
        os._exit(0)
    procs.append(pid)
for pid in procs:
    os.waitpid(pid, 0)
lines = open(log, "rb").read().split(b"\n")[:-1]
if sorted(lines) != sorted(b"%d %03d" % (k, i) for k in range(4) for i in range(500)):
    fail("O_APPEND through write-only opens lost or mangled lines (%d of 2000)" % len(lines))
PY
afs_umount
echo "wronly_io: ok"
