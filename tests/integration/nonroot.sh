#!/usr/bin/env bash
# nonroot.sh - the daemon run by an unprivileged user over a directory it
# owns.
#   1. Without allow_other it serves its owner: writes read back, a create,
#      a write-only open (O_WRONLY) of an existing file and of a file the
#      owner may only write (mode 0200: the daemon cannot read it either,
#      so it is served without a cache), partial-page writes, truncate,
#      rename, unlink, mkdir, links, chmod, user.* attributes,
#      user.aheadfs.* stats, map and advice, the tunables (the owner may
#      set them), aheadfs-stat; every byte read through the mount equals
#      the backing's; root is refused (no allow_other).  With
#      write_mode=writeback, the documented case: a partial-page write
#      through a write-only open of a file the daemon may not read fails
#      with EBADF, a whole page is written, a readable file takes both.
#   2. With allow_other (user_allow_other is added to /etc/fuse.conf for
#      the mount and the file restored, also on failure): the mount has
#      default_permissions, and a second user may do exactly what the
#      backing lets them (perm_matrix.py: never read or write the owner's
#      files beyond their modes, never set the tunables).
#   3. allow_other with no_default_permissions: the daemon warns that every
#      user acts with its owner's rights -- and that is so.
# In ASan builds the daemon's clean exit carries LeakSanitizer's verdict.
# /dev/fuse: without udev (containers) it is root's only; the test user
# is given access (an ACL entry) for the test and it is taken back.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_test_other
. "$(dirname "$0")/perm_lib.sh"
: "${AHEADFS_STAT:?AHEADFS_STAT must name aheadfs-stat (ctest sets it)}"
perm_setup

# One such test at a time on the machine: /etc/fuse.conf and /dev/fuse.
afs_user_fuse_dev

S=$AFS_SRC
chown "$AFS_USER:" "$S" "$AFS_MNT"
export AFS_DAEMON_AS_USER=1

# --- 1. the owner alone -----------------------------------------------
head -c $((8 << 20)) /dev/urandom >"$S/big"
cp "$S/big" "$S/big.orig"
printf 'only written\n' >"$S/wo"
chmod 0200 "$S/wo"
chown "$AFS_USER:" "$S/big" "$S/big.orig" "$S/wo"
afs_mount
[ "$(ps -o user= -p "$AFS_PID")" = "$AFS_USER" ] ||
	afs_fail "the daemon runs as $(ps -o user= -p "$AFS_PID")"
# Without allow_other the kernel refuses everyone but the mount's owner.
afs_must_fail ls "$AFS_MNT"

owner_py='
import errno, json, os, subprocess, sys
M, S, stat_tool = sys.argv[1:4]
bad = 0

def fail(msg):
    global bad
    print("FAIL: owner: " + msg, file=sys.stderr)
    bad = 1

def eq(what, want, got):
    if want != got:
        fail("%s: expected %r, got %r" % (what, want, got))

def errname(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]

def read(p, bs=65536):
    out = bytearray()
    with open(p, "rb", buffering=0) as f:
        while True:
            b = f.read(bs)
            if not b:
                return bytes(out)
            out += b

# every byte of a big file, sequentially and at random offsets
big = read(S + "/big.orig")
eq("big read through the mount", big, read(M + "/big"))
eq("big read in 1 MiB pieces", big, read(M + "/big", 1 << 20))
fd = os.open(M + "/big", os.O_RDONLY)
for i in range(200):
    off = (i * 7919 * 4096 + i * 123) % (len(big) - 70000)
    if os.pread(fd, 70000, off) != big[off:off + 70000]:
        fail("random pread at %d" % off)
        break
os.close(fd)
# write, create, write-only opens
data = os.urandom(300000)
with open(M + "/f1", "wb") as f:
    f.write(data)
eq("f1 through the mount", data, read(M + "/f1"))
eq("f1 on the backing", data, read(S + "/f1"))
eq("O_EXCL create", "ok",
   errname(lambda: os.close(os.open(M + "/c1", os.O_CREAT | os.O_EXCL |
                                    os.O_WRONLY, 0o644))))
eq("O_EXCL again", "EEXIST",
   errname(lambda: os.open(M + "/c1", os.O_CREAT | os.O_EXCL | os.O_WRONLY)))
fd = os.open(M + "/f1", os.O_WRONLY)
os.pwrite(fd, b"PATCH", 4097)
os.close(fd)
data = data[:4097] + b"PATCH" + data[4102:]
eq("O_WRONLY patch read back", data, read(M + "/f1"))
# a file the owner (and so the daemon) may only write
fd = os.open(M + "/wo", os.O_WRONLY)
os.pwrite(fd, b"ONLY", 5)
os.pwrite(fd, b"X" * 5000, 10000)
os.close(fd)
fd = os.open(M + "/wo", os.O_WRONLY | os.O_APPEND)
os.write(fd, b"tail")
os.close(fd)
fd = os.open(M + "/w2", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o200)
os.write(fd, b"new write-only file\n")
os.close(fd)
for p in ("wo", "w2"):
    eq("read of write-only " + p, "EACCES", errname(lambda: read(M + "/" + p)))
# truncate, rename, unlink, mkdir, links, chmod
os.truncate(M + "/f1", 5000)
eq("truncated size", 5000, os.stat(M + "/f1").st_size)
eq("truncated bytes", data[:5000], read(M + "/f1"))
os.rename(M + "/c1", M + "/c2")
eq("old name gone", "ENOENT", errname(lambda: os.stat(M + "/c1")))
os.rename(M + "/c2", M + "/big.copy")
os.unlink(M + "/big.copy")
eq("unlinked", "ENOENT", errname(lambda: os.stat(S + "/big.copy")))
os.mkdir(M + "/d")
os.symlink("../f1", M + "/d/s")
eq("symlink", "../f1", os.readlink(M + "/d/s"))
os.link(M + "/f1", M + "/d/h")
eq("hard link count", 2, os.stat(M + "/f1").st_nlink)
os.unlink(M + "/d/s")
os.unlink(M + "/d/h")
os.rmdir(M + "/d")
os.chmod(M + "/f1", 0o640)
eq("chmod", 0o640, os.stat(S + "/f1").st_mode & 0o7777)
# user.* attributes
os.setxattr(M + "/f1", "user.a", b"1")
eq("getxattr", b"1", os.getxattr(M + "/f1", "user.a"))
eq("on the backing", b"1", os.getxattr(S + "/f1", "user.a"))
eq("listxattr", ["user.a"], os.listxattr(M + "/f1"))
os.removexattr(M + "/f1", "user.a")
eq("removed", "ENODATA", errname(lambda: os.getxattr(S + "/f1", "user.a")))
# user.aheadfs.*: stats, map, advice; tunables (the owner may)
st = json.loads(os.getxattr(M + "/big", "user.aheadfs.stats"))
eq("stats size", len(big), st["file"]["size"])
if st["cache"]["hits"] + st["cache"]["misses"] == 0:
    fail("stats of big count no reads")
json.loads(os.getxattr(M + "/big", "user.aheadfs.map"))
json.loads(os.getxattr(M, "user.aheadfs.stats"))
os.setxattr(M + "/big", "user.aheadfs.advice", b"sequential")
eq("advice", b"sequential", os.getxattr(M + "/big", "user.aheadfs.advice"))
old = os.getxattr(M, "user.aheadfs.ra_max")
os.setxattr(M, "user.aheadfs.ra_max", b"1M")
eq("ra_max set by the owner", b"1048576", os.getxattr(M, "user.aheadfs.ra_max"))
os.setxattr(M, "user.aheadfs.ra_max", old)
os.setxattr(M, "user.aheadfs.context_ra", b"off")
eq("context_ra set by the owner", b"off",
   os.getxattr(M, "user.aheadfs.context_ra"))
os.setxattr(M, "user.aheadfs.context_ra", b"on")
for p in (M, M + "/big"):
    out = subprocess.run([stat_tool, "--json", p], capture_output=True)
    eq("aheadfs-stat --json " + p, 0, out.returncode)
    json.loads(out.stdout)
sys.exit(bad)
'
afs_as_user python3 -c "$owner_py" "$AFS_MNT" "$S" "$AFS_UBIN/aheadfs-stat" ||
	afs_fail "the owner was not served correctly (lines above)"
afs_umount
# What the write-only opens wrote, read on the backing.
[ "$(head -c 9 "$S/wo")" = "only ONLY" ] || afs_fail "wo: $(head -c 9 "$S/wo")"
[ "$(tail -c 4 "$S/wo")" = tail ] || afs_fail "wo: the append is missing"
[ "$(stat -c %s "$S/wo")" = $((15000 + 4)) ] || afs_fail "wo: size $(stat -c %s "$S/wo")"
[ "$(dd if="$S/wo" bs=1 skip=10000 count=5000 status=none | tr -d X | wc -c)" = 0 ] ||
	afs_fail "wo: the 5000 X at 10000 are not all there"
[ "$(cat "$S/w2")" = "new write-only file" ] || afs_fail "w2: $(cat "$S/w2")"
[ "$(stat -c '%a %U' "$S/w2")" = "200 $AFS_USER" ] || afs_fail "w2: $(stat -c '%a %U' "$S/w2")"

# --- 1b. write_mode=writeback: the documented write-only case ---------
# (docs/tuning.md) The kernel reads a page back before it writes part of
# it; a file the daemon may not read is served without a cache, so a
# partial-page write to it fails with EBADF at once, and a whole page is
# written.  A readable file takes both.
printf 'readable file\n' >"$S/wbr"
printf 'only written\n' >"$S/wbw"
chmod 0644 "$S/wbr"
chmod 0200 "$S/wbw"
chown "$AFS_USER:" "$S/wbr" "$S/wbw"
afs_mount -o write_mode=writeback
wb_py='
import errno, os, sys
M = sys.argv[1]
for f in ("wbr", "wbw"):
    for what, off, data in (("partial", 5, b"ABC"), ("page", 4096, b"P" * 4096)):
        try:
            fd = os.open(M + "/" + f, os.O_WRONLY)
            try:
                os.pwrite(fd, data, off)
                os.fsync(fd)
            finally:
                os.close(fd)
            print(f, what, "ok")
        except OSError as e:
            print(f, what, errno.errorcode[e.errno])
'
got=$(afs_as_user python3 -c "$wb_py" "$AFS_MNT" | tr '\n' ' ')
[ "$got" = "wbr partial ok wbr page ok wbw partial EBADF wbw page ok " ] ||
	afs_fail "writeback write-only opens: $got"
afs_umount
[ "$(head -c 14 "$S/wbr")" = "readaABC file" ] || afs_fail "wbr: $(head -c 14 "$S/wbr")"
[ "$(head -c 13 "$S/wbw")" = "only written" ] || afs_fail "wbw: $(head -c 13 "$S/wbw")"
for f in wbr wbw; do
	[ "$(tail -c 4096 "$S/$f" | tr -d P | wc -c)" = 0 ] ||
		afs_fail "$f: the page written at 4096 is not there"
done

# --- 2. allow_other: another user ------------------------------------
conf=/etc/fuse.conf
if [ -e "$conf" ]; then
	cp -p "$conf" "$AFS_WORK/fuse.conf.orig"
	afs_at_exit 'cat "$AFS_WORK/fuse.conf.orig" >/etc/fuse.conf'
else
	afs_at_exit 'rm -f /etc/fuse.conf'
fi
echo user_allow_other >>"$conf"

chmod 0777 "$S"
# "mine": owned by the daemon's owner too.  A file of the other user's that
# the daemon's owner may not touch is beyond any user's daemon.
perm_make_tree "$S/bk" "$AFS_USER" "$AFS_USER" afs-test-g2
perm_make_tree "$S/k" "$AFS_USER" "$AFS_USER" afs-test-g2
M2=$AFS_WORK/mnt-other M3=$AFS_WORK/mnt-nodp
mkdir -p "$M2" "$M3"
chown "$AFS_USER:" "$M2" "$M3"
AFS_MNT=$M2 afs_mount -o allow_other,read_mode=direct
opts=$(awk -v m="$M2" '$5 == m { print $NF }' /proc/self/mountinfo)
[[ ,$opts, == *,default_permissions,* ]] ||
	afs_fail "a user's allow_other mount without default_permissions: $opts"
AFS_MNT=$M3 afs_mount -o allow_other,no_default_permissions
# Mounted: fusermount3 read the file; it is the machine's own again.
if [ -e "$AFS_WORK/fuse.conf.orig" ]; then
	cat "$AFS_WORK/fuse.conf.orig" >"$conf"
	cmp -s "$AFS_WORK/fuse.conf.orig" "$conf" || afs_fail "$conf not restored"
fi
# The owner reads everything first: the daemon holds state for all of it.
for f in pub secret wonly mine grp priv/f search/f list/f; do
	afs_as_user cat "$M2/k/$f" >/dev/null
done
perm_matrix afs_as_other -- "userdaemon=$S/bk=$M2/k"
perm_twins_equal "$S/bk" "$S/k"

# --- 3. allow_other with no_default_permissions ---------------------------
grep -q "every user of the mount acts with the rights of the daemon's owner" \
	"$AFS_LOG" || afs_fail "no warning for no_default_permissions: $(cat "$AFS_LOG")"
# The warning is true: the other user reads what only the owner may.
[ "$(afs_as_other cat "$M3/k/secret" | cmp - "$S/k/secret" && echo same)" = same ] ||
	afs_fail "the warning's case did not happen (the test cannot see it)"
for i in 1 0; do
	AFS_MNT=${_afs_fuse_mnts[$i]} AFS_PID=${_afs_pids[$i]} \
		AFS_LOG=$AFS_WORK/daemon.$((i + 3)).log afs_umount
done
