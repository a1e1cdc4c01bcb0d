#!/usr/bin/env bash
# passthrough.sh - the kernel's FUSE passthrough (-o passthrough=,
# fs/fuse/passthrough.h) on, off and refused.  On every mount,
# passthrough.py runs the open orders -- a created writer, reader then
# writer, writer then reader, a rewrite after a cached reader, a reader
# holding its open while a writer rewrites, shared mappings of a writer and
# of a reader, O_APPEND writers in four processes, O_TRUNC alone and beside
# a reader, O_DIRECT alone, beside a passthrough writer and reading beside
# one, plain readers --
# where every open must succeed and every read return the bytes last
# written, and checks how the stats' passthrough counters moved:
#   1. on: passthrough=writes (lib.sh's afs_mount gives it) in both read
#      modes, resident in both, and all; the log says so once, the state
#      is "on";
#   2. a 16 MiB dd through the mount sends the daemon no WRITE with
#      passthrough (the libfuse trace of -d), and its 16 with
#      passthrough=off -- the bytes are right either way;
#   3. off: passthrough=off; write_mode=writeback (the kernel takes one or
#      the other: state "writeback", one log line, every writer counted a
#      fallback); opens=none (no OPEN to carry it); a backing without
#      O_DIRECT (ramfs), whose files get none (one log line, every writer
#      counted in fallback_file);
#   4. refused: the daemon run by an unprivileged user (no CAP_SYS_ADMIN):
#      the kernel refuses its backing files; one log line, state
#      "refused", every writer counted a fallback, no open fails;
#   5. a setuid file written by a user through an allow_other mount keeps
#      aheadfs's path (counted in fallback_setid): the bit is cleared, as
#      the backing clears it for that user;
#   6. passthrough=resident, the daemon's default (also run through the
#      open orders in 1): a reader of a file the backing's page cache holds
#      (whole, or but for 16 of 2048 pages) gets passthrough (opens_resident),
#      one of a file it does not
#      hold (dropped) aheadfs's path, also once the file is resident again
#      while that open is held; a passthrough reader sees a change behind
#      the mount; a file advised random (user.aheadfs.advice) gets it
#      without being resident (opens_random), and back on aheadfs's path
#      once advised normal; on tmpfs every file is resident.
# Skipped where the kernel offers no FUSE passthrough (before Linux 6.9).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_test_user
command -v python3 >/dev/null || afs_fail "python3 missing"
PY=$(dirname "$0")/passthrough.py

state() { # KEY (default state): the mount's passthrough.KEY
	afs_root_stat passthrough "${1:-state}"
}

# --- 1. on --------------------------------------------------------------
afs_fresh writes
afs_mount
if [ "$(afs_log_lines 'offers no FUSE passthrough')" -ne 0 ]; then
	afs_umount
	echo "SKIP: $AFS_TEST_NAME: the kernel offers no FUSE passthrough" >&2
	exit 77
fi
[ "$(afs_log_lines 'passthrough=writes: the kernel.s FUSE passthrough serves')" -eq 1 ] ||
	afs_fail "the log does not say once that passthrough is on"
[ "$(state)" = on ] || afs_fail "passthrough.state is $(state), not on"
python3 "$PY" "$AFS_MNT" "$AFS_SRC" writes kernel
afs_umount

afs_fresh direct
afs_mount -o read_mode=direct
python3 "$PY" "$AFS_MNT" "$AFS_SRC" writes direct
afs_umount

for rm in kernel direct; do
	afs_fresh "resident.$rm"
	afs_mount -o passthrough=resident,read_mode=$rm
	[ "$(state mode)" = resident ] || afs_fail "passthrough.mode is $(state mode), not resident"
	python3 "$PY" "$AFS_MNT" "$AFS_SRC" resident $rm
	afs_umount
done

afs_fresh all
afs_mount -o passthrough=all
[ "$(state mode)" = all ] || afs_fail "passthrough.mode is $(state mode), not all"
python3 "$PY" "$AFS_MNT" "$AFS_SRC" all kernel
afs_umount

# --- 2. no WRITE reaches the daemon ---------------------------------------
head -c $((16 << 20)) /dev/urandom >"$AFS_WORK/want"
for pt in writes off; do
	afs_fresh "dd.$pt"
	afs_mount -d -o passthrough=$pt
	dd if="$AFS_WORK/want" of="$AFS_MNT/dd" bs=1M conv=fsync status=none
	cmp "$AFS_MNT/dd" "$AFS_WORK/want" || afs_fail "passthrough=$pt: dd's file reads back wrong"
	cmp "$AFS_SRC/dd" "$AFS_WORK/want" || afs_fail "passthrough=$pt: the backing has wrong bytes"
	n=$(afs_log_lines 'opcode: WRITE ')
	echo "passthrough=$pt: 16 MiB by dd, $n WRITE requests reached the daemon"
	if [ $pt = writes ]; then
		[ "$n" -eq 0 ] || afs_fail "passthrough=writes: $n WRITE requests reached the daemon"
	else
		[ "$n" -ge 16 ] || afs_fail "passthrough=off: only $n WRITE requests: the check cannot tell"
	fi
	afs_umount
done

# --- 3. off ---------------------------------------------------------------
afs_fresh off
afs_mount -o passthrough=off
[ "$(state)" = off ] || afs_fail "passthrough=off: state $(state)"
python3 "$PY" "$AFS_MNT" "$AFS_SRC" off kernel
afs_umount

afs_fresh writeback
afs_mount -o write_mode=writeback
[ "$(state)" = writeback ] || afs_fail "write_mode=writeback: state $(state)"
[ "$(afs_log_lines 'off with write_mode=writeback')" -eq 1 ] ||
	afs_fail "write_mode=writeback: no one log line for the fallback"
python3 "$PY" "$AFS_MNT" "$AFS_SRC" writeback kernel
afs_umount

afs_fresh none
afs_mount -o opens=none
python3 "$PY" "$AFS_MNT" "$AFS_SRC" none kernel
[ "$(state)" = opens_none ] || afs_fail "opens=none: state $(state)"
afs_umount

# A backing without O_DIRECT (ramfs): its files get no passthrough (an
# O_DIRECT open joining one would fail), one log line, fallback_file.
afs_fresh ramfs
mount -t ramfs ramfs "$AFS_SRC" || afs_fail "mount -t ramfs failed"
afs_at_exit 'umount -l "$AFS_WORK/src.ramfs" 2>/dev/null || true'
afs_mount
python3 "$PY" "$AFS_MNT" "$AFS_SRC" file kernel
[ "$(afs_log_lines 'no backing file for inode .* (Invalid argument)')" -eq 1 ] ||
	afs_fail "ramfs: not one log line for the files without passthrough"
afs_umount

# --- 4. refused: no CAP_SYS_ADMIN -----------------------------------------
afs_user_fuse_dev
afs_fresh refused
chown "$AFS_USER:" "$AFS_SRC" "$AFS_MNT"
cp "$PY" "$AFS_UBIN/"
AFS_DAEMON_AS_USER=1 afs_mount
afs_as_user python3 "$AFS_UBIN/passthrough.py" "$AFS_MNT" "$AFS_SRC" refused kernel
[ "$(afs_as_user python3 -c 'import json, os, sys
print(json.loads(os.getxattr(sys.argv[1], "user.aheadfs.stats"))["passthrough"]["state"])' \
	"$AFS_MNT")" = refused ] || afs_fail "no CAP_SYS_ADMIN: the state is not refused"
[ "$(afs_log_lines 'the daemon needs CAP_SYS_ADMIN')" -eq 1 ] ||
	afs_fail "no CAP_SYS_ADMIN: not one log line for the refusal"
afs_umount

# --- 5. a setuid file's writer --------------------------------------------
afs_fresh setid
chmod 0777 "$AFS_SRC"
printf 'setuid\n' >"$AFS_SRC/suid"
chmod 04777 "$AFS_SRC/suid"
afs_mount -o allow_other
afs_as_user python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.write(fd, b"x")
os.close(fd)' "$AFS_MNT/suid"
mode=$(stat -c %a "$AFS_SRC/suid")
[ "$mode" = 777 ] || afs_fail "a user's write through the mount left mode $mode (the backing clears setuid)"
[ "$(state fallback_setid)" -eq 1 ] || afs_fail "the setuid file's writer was not kept on aheadfs's path"
afs_umount

# --- 6. passthrough=resident ------------------------------------------------
# drop FILE...: the backing's page cache lets go of each file's pages
drop() {
	python3 -c 'import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)' "$@"
}
# held FILE: pages of FILE the backing's page cache holds (mincore(2) of a
# private mapping: the page cache's pages until written to)
held() {
	python3 -c 'import ctypes, mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
n = (os.fstat(fd).st_size + 4095) // 4096
m = mmap.mmap(fd, n * 4096, access=mmap.ACCESS_COPY)
vec = (ctypes.c_ubyte * n)()
libc = ctypes.CDLL(None, use_errno=True)
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
at = ctypes.addressof(ctypes.c_char.from_buffer(m))
if libc.mincore(at, n * 4096, vec):
    sys.exit("mincore: " + os.strerror(ctypes.get_errno()))
print(sum(b & 1 for b in vec))' "$1"
}
afs_fresh resident
head -c $((8 << 20)) /dev/urandom >"$AFS_SRC/hot"
head -c $((8 << 20)) /dev/urandom >"$AFS_SRC/cold"
cp "$AFS_SRC/hot" "$AFS_WORK/hot.want"
cp "$AFS_SRC/cold" "$AFS_WORK/cold.want"
drop "$AFS_SRC/cold"
afs_pin "$AFS_SRC/hot" # resident until its opens below are decided
AFS_PASSTHROUGH= afs_mount # the default
[ "$(state mode)" = resident ] || afs_fail "the default passthrough= is $(state mode), not resident"
if [ "$(held "$AFS_SRC/cold")" -ne 0 ]; then
	echo "passthrough=resident: the backing keeps the dropped file's pages (a memory filesystem?): the cold half is not tested" >&2
else
	cmp "$AFS_MNT/cold" "$AFS_WORK/cold.want" || afs_fail "passthrough=resident: a cold file reads back wrong"
	[ "$(state opens_cached)" -eq 1 ] && [ "$(state opens_resident)" -eq 0 ] ||
		afs_fail "passthrough=resident: a file the page cache does not hold got passthrough"
	# held open on aheadfs's path, the file read into the page cache
	# behind it: a new reader keeps that path (the kernel takes one kind)
	exec 7<"$AFS_MNT/cold"
	cat "$AFS_SRC/cold" >/dev/null
	cmp "$AFS_MNT/cold" "$AFS_WORK/cold.want" || afs_fail "passthrough=resident: a reader beside a held one reads wrong"
	exec 7<&-
	[ "$(state opens_resident)" -eq 0 ] || afs_fail "passthrough=resident: a reader beside a cached open got passthrough"
fi
n=$(state opens)
cmp "$AFS_MNT/hot" "$AFS_WORK/hot.want" || afs_fail "passthrough=resident: a resident file reads back wrong"
[ "$(state opens_resident)" -eq 1 ] && [ "$(state opens)" -eq $((n + 1)) ] ||
	afs_fail "passthrough=resident: a file the page cache holds got no passthrough"
# a change behind the mount, seen by a passthrough reader holding its open
# (probed again, or joining cmp's open if its RELEASE is still on its way)
exec 7<"$AFS_MNT/hot"
printf 'changed behind' | dd of="$AFS_SRC/hot" bs=1 seek=4096 conv=notrunc status=none
got=$(python3 -c 'import os; print(os.pread(7, 14, 4096).decode(errors="replace"))')
# the file's own stats say its reads are the kernel's
held_pt=$(python3 -c 'import json, os, sys
print(json.loads(os.getxattr(sys.argv[1], "user.aheadfs.stats"))["file"]["passthrough_opens"])' "$AFS_MNT/hot")
exec 7<&-
[ "$held_pt" -ge 1 ] || afs_fail "passthrough=resident: the file's stats show $held_pt passthrough opens while one is held"
[ "$got" = "changed behind" ] || afs_fail "passthrough=resident: a held passthrough reader reads '$got' after a change behind the mount"
[ "$(state opens)" -eq $((n + 2)) ] || afs_fail "passthrough=resident: the held reader was not passthrough"
afs_unpin
# a file held but for a few pages (what a proactive reclaimer takes) still
# gets passthrough: 2048 pages written 4 KiB at a time, locked in memory by a
# holder but for 16 it drops (at most one page in 64 may be missing)
dd if=/dev/urandom of="$AFS_SRC/near" bs=4k count=2048 status=none
cp "$AFS_SRC/near" "$AFS_WORK/near.want"
coproc NEAR { exec python3 -c 'import ctypes, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.fsync(fd)  # a dirty page is not dropped
size = os.fstat(fd).st_size
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mlock.argtypes = libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
at = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
if at in (None, ctypes.c_void_p(-1).value) or libc.mlock(at, size):
    sys.exit("cannot lock the file: " + os.strerror(ctypes.get_errno()))
for k in range(16):  # unmapped and unlocked, then dropped
    off = (k * 127 + 3) * 4096
    libc.munmap(at + off, 4096)
    os.posix_fadvise(fd, off, 4096, os.POSIX_FADV_DONTNEED)
print("ready", flush=True)
sys.stdin.read()' "$AFS_SRC/near"; }
near_in=${NEAR[1]} near_pid=$NEAR_PID
read -r line <&"${NEAR[0]}" || line=
[ "$line" = ready ] || afs_fail "passthrough=resident: cannot hold the near file in memory"
missing=$((2048 - $(held "$AFS_SRC/near")))
if [ "$missing" -eq 0 ]; then
	echo "passthrough=resident: the backing keeps the dropped pages (a memory filesystem?): the slack is not tested" >&2
else
	[ "$missing" -le 32 ] || afs_fail "passthrough=resident: $missing pages of the near file missing, not 16"
	r=$(state opens_resident)
	cmp "$AFS_MNT/near" "$AFS_WORK/near.want" || afs_fail "passthrough=resident: a file held but for $missing pages reads back wrong"
	[ "$(state opens_resident)" -eq $((r + 1)) ] ||
		afs_fail "passthrough=resident: a file held but for $missing of 2048 pages got no passthrough"
fi
exec {near_in}>&-
wait "$near_pid" || afs_fail "passthrough=resident: the near file's holder failed"
# a file advised random gets passthrough whatever the page cache holds
# (aheadfs would read nothing ahead for it), and normal advice takes it
# back to aheadfs's path at its next first open
drop "$AFS_SRC/cold"
setfattr -n user.aheadfs.advice -v random "$AFS_MNT/cold"
n=$(state opens)
cmp "$AFS_MNT/cold" "$AFS_WORK/cold.want" || afs_fail "passthrough=resident: a file advised random reads back wrong"
[ "$(state opens_random)" -eq 1 ] && [ "$(state opens)" -eq $((n + 1)) ] ||
	afs_fail "passthrough=resident: a file advised random got no passthrough"
setfattr -n user.aheadfs.advice -v normal "$AFS_MNT/cold"
drop "$AFS_SRC/cold"
c=$(state opens_cached)
if [ "$(held "$AFS_SRC/cold")" -eq 0 ]; then
	cmp "$AFS_MNT/cold" "$AFS_WORK/cold.want" || afs_fail "passthrough=resident: a file advised normal again reads back wrong"
	[ "$(state opens_cached)" -eq $((c + 1)) ] && [ "$(state opens_random)" -eq 1 ] ||
		afs_fail "passthrough=resident: a cold file advised normal again did not take aheadfs's path"
fi
afs_umount

# tmpfs holds its files whole by nature (no cachestat(2) walk)
afs_fresh resident.tmpfs
mount -t tmpfs tmpfs "$AFS_SRC" || afs_fail "mount -t tmpfs failed"
afs_at_exit 'umount -l "$AFS_WORK/src.resident.tmpfs" 2>/dev/null || true'
head -c $((4 << 20)) /dev/urandom >"$AFS_SRC/f"
afs_mount -o passthrough=resident
cmp "$AFS_MNT/f" "$AFS_SRC/f" || afs_fail "passthrough=resident on tmpfs: reads back wrong"
[ "$(state opens_resident)" -eq 1 ] || afs_fail "passthrough=resident on tmpfs: the file got no passthrough"
afs_umount
echo "passthrough: ok"
