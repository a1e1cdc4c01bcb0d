#!/usr/bin/env bash
# transport_uring.sh - FUSE over io_uring (-o transport=uring,
# fs/fuse/uring.h) on, off and refused:
#   1. on (the fuse module's enable_uring=Y): the log says once that
#      requests come through io_uring, the stats say mode uring, state on;
#      metadata calls, a file's bytes read back whole and at random
#      offsets by four threads, writes, and 1 MiB requests both ways
#      (read_mode=direct, passthrough=off: every read and write reaches
#      the daemon at the payload's full size) give the bytes the backing
#      has; the stats' request count grows with them and no request went
#      unanswered; the unmount and a SIGTERM end the daemon with status 0;
#   2. unsupported (enable_uring=N): one log line, state "unsupported",
#      every request through /dev/fuse, the same bytes;
#   3. the default (transport=dev): mode dev, state off, nothing counted;
#   4. -s with transport=uring is refused before anything is mounted.
# The module parameter is the kernel's, shared by every mount: this test
# holds the enable_uring lock (CMakeLists.txt) and puts it back as it was.
# Skipped where the kernel has no FUSE over io_uring (before Linux 6.14).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_require_root
command -v python3 >/dev/null || afs_fail "python3 missing"
param=/sys/module/fuse/parameters/enable_uring
if [ ! -w "$param" ]; then
	echo "SKIP: $AFS_TEST_NAME: no $param (FUSE over io_uring: Linux 6.14 and later)" >&2
	exit 77
fi
was=$(cat "$param")
afs_at_exit "echo $was > $param"

transport() { afs_root_stat transport "$1"; } # KEY: the mount's transport.KEY

fresh() { # NAME: afs_fresh, with 24 MiB of data to read
	afs_fresh "$1"
	head -c $((24 << 20)) /dev/urandom >"$AFS_SRC/data"
}

# The bytes through the mount are the backing's: whole, at random offsets
# by four threads, written, and metadata.
traffic() {
	cmp "$AFS_SRC/data" "$AFS_MNT/data" || afs_fail "whole read differs"
	python3 - "$AFS_SRC/data" "$AFS_MNT/data" <<'EOF' || afs_fail "random reads differ"
import os, random, sys, threading
src, mnt = sys.argv[1], sys.argv[2]
size = os.path.getsize(src)
bad = []
def reader(seed):
    r = random.Random(seed)
    a, b = os.open(src, os.O_RDONLY), os.open(mnt, os.O_RDONLY)
    for _ in range(400):
        n = r.choice((1, 512, 4096, 8192, 65536, 131072))
        off = r.randrange(0, size)
        if os.pread(a, n, off) != os.pread(b, n, off):
            bad.append((off, n))
    os.close(a); os.close(b)
ts = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
for t in ts: t.start()
for t in ts: t.join()
sys.exit(1 if bad else 0)
EOF
	mkdir "$AFS_MNT/d"
	printf 'one\n' >"$AFS_MNT/d/a"
	mv "$AFS_MNT/d/a" "$AFS_MNT/d/b"
	ln -s b "$AFS_MNT/d/l"
	setfattr -n user.k -v v "$AFS_MNT/d/b"
	[ "$(getfattr --only-values -n user.k "$AFS_MNT/d/b")" = v ] ||
		afs_fail "xattr through the mount"
	[ "$(cat "$AFS_MNT/d/l")" = one ] || afs_fail "read through a symlink"
	[ "$(ls "$AFS_MNT/d" | tr '\n' ' ')" = "b l " ] || afs_fail "readdir"
	rm -r "$AFS_MNT/d"
	[ ! -e "$AFS_SRC/d" ] || afs_fail "rm -r left the backing's directory"
	dd if=/dev/urandom of="$AFS_WORK/w" bs=1M count=8 status=none
	dd if="$AFS_WORK/w" of="$AFS_MNT/w" bs=1M conv=fsync status=none
	cmp "$AFS_WORK/w" "$AFS_SRC/w" || afs_fail "written bytes differ"
	cmp "$AFS_WORK/w" "$AFS_MNT/w" || afs_fail "written bytes read back differ"
}

# --- 1. on ----------------------------------------------------------------
echo Y >"$param"
fresh on
afs_mount -o transport=uring
# said by the last ring entry to register, after the mount is up
afs_wait_log 'requests come through io_uring'
[ "$(afs_log_lines 'requests come through io_uring')" -eq 1 ] ||
	afs_fail "the log does not say once that requests come through io_uring"
[ "$(transport mode)" = uring ] || afs_fail "transport.mode is $(transport mode)"
[ "$(transport state)" = on ] || afs_fail "transport.state is $(transport state), not on"
before=$(transport requests)
traffic
after=$(transport requests)
[ "$after" -gt $((before + 100)) ] ||
	afs_fail "transport.requests went from $before to $after only"
[ "$(transport unanswered)" -eq 0 ] || afs_fail "unanswered requests"
afs_umount
[ "$(afs_log_lines 'transport=uring: .*/dev/fuse')" -eq 0 ] ||
	afs_fail "a fallback to /dev/fuse logged: $(cat "$AFS_LOG")"

# Every read and write at the payload's full size (1 MiB requests).
fresh big
afs_mount -o transport=uring,read_mode=direct,passthrough=off
dd if="$AFS_MNT/data" of="$AFS_WORK/big" bs=4M status=none
cmp "$AFS_SRC/data" "$AFS_WORK/big" || afs_fail "1 MiB reads differ"
dd if="$AFS_WORK/big" of="$AFS_MNT/copy" bs=4M oflag=direct status=none
cmp "$AFS_SRC/data" "$AFS_SRC/copy" || afs_fail "1 MiB writes differ"
[ "$(transport unanswered)" -eq 0 ] || afs_fail "unanswered requests"
# SIGTERM: the workers stop, the daemon unmounts and exits 0.
kill -TERM "$AFS_PID"
afs_wait_daemon 0

# --- 2. unsupported ---------------------------------------------------------
echo N >"$param"
fresh off
afs_mount -o transport=uring
[ "$(afs_log_lines 'offers no FUSE over io_uring')" -eq 1 ] ||
	afs_fail "the log does not say once that the kernel offers none"
[ "$(transport state)" = unsupported ] ||
	afs_fail "transport.state is $(transport state), not unsupported"
traffic
[ "$(transport requests)" -eq 0 ] || afs_fail "requests counted without io_uring"
afs_umount

# --- 3. the default -----------------------------------------------------------
echo Y >"$param"
fresh dev
afs_mount
[ "$(transport mode)" = dev ] && [ "$(transport state)" = off ] ||
	afs_fail "the default transport is $(transport mode)/$(transport state)"
traffic
[ "$(transport requests)" -eq 0 ] || afs_fail "requests counted with transport=dev"
afs_umount

# --- 4. -s --------------------------------------------------------------------
fresh single
if out=$("$AHEADFS" -f -s -o transport=uring "$AFS_SRC" "$AFS_MNT" 2>&1); then
	afs_fail "-s with transport=uring was accepted"
fi
grep -q 'transport=uring serves requests on threads of its own: not with -s' <<<"$out" ||
	afs_fail "no clear error for -s with transport=uring: $out"
! mountpoint -q "$AFS_MNT" || afs_fail "mounted after all"
echo "PASS: $AFS_TEST_NAME"
