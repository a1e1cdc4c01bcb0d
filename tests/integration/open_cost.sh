#!/usr/bin/env bash
# open_cost.sh - what an open + read + close costs in FUSE requests, counted
# from the daemon's own debug log (-d prints one "opcode: NAME" line per
# request):
#   1. read-only opens answer OPEN with noflush: 200 open/pread/close of one
#      file send no FLUSH at all, in both read modes;
#   2. writable opens keep their FLUSH (close(2) reports the backing's
#      close errors): each close of an O_WRONLY or O_RDWR open sends one;
#   3. the bytes read are the backing's;
#   4. plain read-only opens share the inode's one read-only descriptor (no
#      reopen per open): 20 of them held open at once add at most one
#      backing descriptor to the daemon, while 20 O_NOATIME opens and 20
#      O_RDWR opens each get their own -- and all of them read the
#      backing's bytes, the shared ones also after the others closed;
#   5. -o opens=none (zero-message opens): the first OPEN, CREATE and FLUSH
#      are answered ENOSYS and none follows -- 200 reads, 20 writable opens
#      and 20 creates send at most one of each and no RELEASE -- and what
#      they read and wrote is the backing's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
head -c 1M /dev/urandom >"$AFS_SRC/f"

opcodes()
{
	grep -c "opcode: $1 " "$AFS_LOG" || true
}

for mode in kernel direct; do
	afs_mount -d -o read_mode=$mode
	python3 - "$AFS_MNT/f" "$AFS_SRC/f" <<'PY'
import os, sys
mnt, src = sys.argv[1], sys.argv[2]
want = open(src, "rb").read()
for i in range(200):
    off = (i * 11 * 1024) % (len(want) - 11 * 1024)
    fd = os.open(mnt, os.O_RDONLY)
    got = os.pread(fd, 11 * 1024, off)
    os.close(fd)
    if got != want[off:off + 11 * 1024]:
        sys.exit("wrong bytes at %d" % off)
PY
	sleep 0.3 # RELEASE is sent in the background
	opens=$(opcodes OPEN)
	flushes=$(opcodes FLUSH)
	releases=$(opcodes RELEASE)
	echo "$mode read-only: OPEN $opens FLUSH $flushes RELEASE $releases"
	[ "$opens" -ge 1 ] || afs_fail "$mode: no OPEN counted: is -d output parsed right?"
	[ "$flushes" -eq 0 ] || afs_fail "$mode: $flushes FLUSH for read-only opens"
	[ "$releases" -eq "$opens" ] || afs_fail "$mode: $releases RELEASE for $opens OPEN"

	python3 - "$AFS_MNT/f" <<'PY'
import os, sys
for flags in [os.O_WRONLY] * 10 + [os.O_RDWR] * 10:
    fd = os.open(sys.argv[1], flags)
    os.close(fd)
PY
	sleep 0.3
	wflushes=$(opcodes FLUSH)
	echo "$mode writable: FLUSH $wflushes for 20 opens"
	[ "$wflushes" -eq 20 ] || afs_fail "$mode: $wflushes FLUSH for 20 writable opens"

	python3 - "$AFS_MNT/f" "$AFS_SRC/f" "$AFS_PID" <<'PY' || afs_fail "$mode: descriptors of held opens"
import os, sys
mnt, src, pid = sys.argv[1], sys.argv[2], sys.argv[3]
want = open(src, "rb").read()
def backing_fds():
    n = 0
    for e in os.listdir("/proc/%s/fd" % pid):
        try:
            if os.readlink("/proc/%s/fd/%s" % (pid, e)) == src:
                n += 1
        except OSError:
            pass
    return n
def hold(flags):
    fds = [os.open(mnt, flags) for _ in range(20)]
    for i, fd in enumerate(fds):
        off = i * 4096
        if os.pread(fd, 4096, off) != want[off:off + 4096]:
            sys.exit("wrong bytes through open %d (flags %o)" % (i, flags))
    return fds
os.close(os.open(mnt, os.O_RDONLY))
base = backing_fds()
shared = hold(os.O_RDONLY)
n_shared = backing_fds() - base
own = hold(os.O_RDONLY | os.O_NOATIME) + hold(os.O_RDWR)
n_own = backing_fds() - base - n_shared
for fd in own:
    os.close(fd)
for i, fd in enumerate(shared):
    if os.pread(fd, 4096, 8192 * i) != want[8192 * i:8192 * i + 4096]:
        sys.exit("wrong bytes through shared open %d after the others closed" % i)
    os.close(fd)
print("descriptors: 20 read-only opens +%d, 20 O_NOATIME + 20 O_RDWR opens +%d"
      % (n_shared, n_own))
if n_shared > 1:
    sys.exit("20 plain read-only opens hold %d backing descriptors" % n_shared)
if n_own != 40:
    sys.exit("40 opens with their own descriptor hold %d" % n_own)
PY
	afs_umount
done
afs_mount -d -o opens=none
python3 - "$AFS_MNT" "$AFS_SRC" <<'PY'
import os, sys
mnt, src = sys.argv[1], sys.argv[2]
want = open(src + "/f", "rb").read()
for i in range(200):
    off = (i * 11 * 1024) % (len(want) - 11 * 1024)
    fd = os.open(mnt + "/f", os.O_RDONLY)
    got = os.pread(fd, 11 * 1024, off)
    os.close(fd)
    if got != want[off:off + 11 * 1024]:
        sys.exit("wrong bytes at %d" % off)
for i in range(10):
    fd = os.open(mnt + "/f", os.O_WRONLY)
    os.pwrite(fd, b"w%d" % i, i * 4096)
    os.close(fd)
    fd = os.open(mnt + "/f", os.O_RDWR | os.O_APPEND)
    os.write(fd, b"a%d" % i)
    os.close(fd)
for i in range(20):
    fd = os.open(mnt + "/new.%d" % i, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640)
    os.write(fd, b"n%d" % i)
    os.close(fd)
    if open(src + "/new.%d" % i, "rb").read() != b"n%d" % i:
        sys.exit("created file %d" % i)
got = open(src + "/f", "rb").read()
exp = bytearray(want)
for i in range(10):
    exp[i * 4096:i * 4096 + 2] = b"w%d" % i
exp += b"".join(b"a%d" % i for i in range(10))
if got != bytes(exp):
    sys.exit("writes and appends through opens=none differ from the backing")
PY
sleep 0.3
n_open=$(opcodes OPEN) n_flush=$(opcodes FLUSH) n_release=$(opcodes RELEASE)
n_create=$(opcodes CREATE)
echo "opens=none: OPEN $n_open FLUSH $n_flush RELEASE $n_release CREATE $n_create"
[ "$n_open" -le 1 ] || afs_fail "opens=none: $n_open OPEN requests"
[ "$n_flush" -le 1 ] || afs_fail "opens=none: $n_flush FLUSH requests"
[ "$n_release" -eq 0 ] || afs_fail "opens=none: $n_release RELEASE requests"
[ "$n_create" -le 1 ] || afs_fail "opens=none: $n_create CREATE requests"
afs_umount
echo "open_cost: ok"
