#!/usr/bin/env bash
# killpriv.sh - a write, a truncate or a chown through an allow_other mount
# clears setuid, setgid and security.capability exactly as the same call on
# the backing does for the same caller (differential: every case runs on a
# file of the backing and on a twin file through the mount, and the outcome,
# the mode left and the capability left must be equal).
#
# Cases: modes 04777, 02777, 02767 (setgid without group-execute), 06777,
# 06767; 0777, 04777, 02777, 0755 and 04755 with a file capability; the
# file owned by
# root or by the test user, its group the user's supplementary group or
# root's; the operation a 1-byte write (open O_WRONLY, no truncation), an
# append, a truncate(2), an ftruncate on an O_WRONLY fd, an O_TRUNC open,
# a posix_fallocate, a copy_file_range into the file, a chown by root, a
# chgrp by the owner and a chown by a non-owner; run by root and by the
# test user;
# through a mount in each read mode (kernel, direct) and one with
# no_default_permissions (the backing alone decides).  One process runs
# the matrix (python3): about 1000 cases, half a minute on two cores.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_test_user
command -v setcap >/dev/null || afs_fail "setcap missing (package libcap2-bin)"
command -v python3 >/dev/null || afs_fail "python3 missing"

command -v getcap >/dev/null || afs_fail "getcap missing (package libcap2-bin)"

S=$AFS_SRC
# The raw value of a file capability, made once by setcap.
touch "$AFS_WORK/capref"
setcap cap_net_raw+ep "$AFS_WORK/capref"

# The matrix, in one process: every case sets a file up on the backing
# (S/direct/cN) and its twin (S/<mount>/cN), runs the operation on the
# first directly and on the second through the mount, as root or (in a
# child that drops to the test user's ids and groups) as the user, and
# compares the outcome and what was left on the backing: mode, owner,
# size, the capability; and the mode the mount shows right after is the
# backing's.
matrix_py='
import ctypes, errno, os, sys
S, mnts, uid, gid, g1, g2, capref = sys.argv[1:8]
uid, gid, g1, g2 = int(uid), int(gid), int(g1), int(g2)
groups = os.getgrouplist("afs-test-user", gid)
CAP = os.getxattr(capref, "security.capability")

def do(op, path, arg):
    try:
        if op == "write":
            fd = os.open(path, os.O_WRONLY)
            try:
                os.pwrite(fd, b"x", 0)
            finally:
                os.close(fd)
        elif op == "append":
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, b"tail")
            finally:
                os.close(fd)
        elif op == "truncate":
            os.truncate(path, 3)
        elif op == "ftruncate":
            fd = os.open(path, os.O_WRONLY)
            try:
                os.ftruncate(fd, 2)
            finally:
                os.close(fd)
        elif op == "fallocate":
            fd = os.open(path, os.O_WRONLY)
            try:
                os.posix_fallocate(fd, 0, 16384)
            finally:
                os.close(fd)
        elif op == "copy":
            src = os.open(os.path.dirname(path) + "/cfsrc", os.O_RDONLY)
            fd = os.open(path, os.O_WRONLY)
            try:
                os.copy_file_range(src, fd, 4096, 0, 0)
            finally:
                os.close(fd)
                os.close(src)
        elif op == "otrunc":
            os.close(os.open(path, os.O_WRONLY | os.O_TRUNC))
        elif op == "chown":
            os.chown(path, arg, -1)
        elif op == "chgrp":
            os.chown(path, -1, arg)
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]

def as_actor(actor, op, path, arg):
    if actor == "root":
        return do(op, path, arg)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.setgroups(groups)
        os.setgid(gid)
        os.setuid(uid)
        os.write(w, do(op, path, arg).encode())
        os._exit(0)
    os.close(w)
    out = os.read(r, 64).decode()
    os.close(r)
    os.waitpid(pid, 0)
    return out

libc = ctypes.CDLL(None, use_errno=True)
NR_STATX = {"x86_64": 332, "aarch64": 291}[os.uname().machine]
def mode_only(path):
    buf = ctypes.create_string_buffer(256)
    # statx(AT_FDCWD, path, 0, STATX_MODE): stx_mode is the u16 at 28
    if libc.syscall(NR_STATX, -100, path.encode(), 0, 2, buf):
        raise OSError(ctypes.get_errno(), "statx " + path)
    return int.from_bytes(buf.raw[28:30], "little") & 0o7777

def left(path):
    st = os.stat(path)
    try:
        cap = "cap" if os.getxattr(path, "security.capability") else "-"
    except OSError:
        cap = "-"
    return "%o %d:%d %d %s" % (st.st_mode & 0o7777, st.st_uid, st.st_gid,
                             st.st_size, cap)

bad = n = 0
modes = ["4777", "2777", "2767", "6777", "6767", "0777/cap", "4777/cap",
         "2777/cap", "0755/cap", "4755/cap"]

def user_may_write(m, o, g):
    return bool(m & 0o002 or (o == uid and m & 0o200) or
                (g in groups and o != uid and m & 0o020))
owners = [(0, 0), (0, g1), (uid, g1), (uid, 0)]
ops = [("user", "write", None), ("user", "append", None),
       ("user", "truncate", None), ("user", "ftruncate", None),
       ("user", "otrunc", None), ("user", "fallocate", None),
       ("user", "copy", None),
       ("root", "write", None), ("root", "fallocate", None),
       ("root", "truncate", None), ("root", "chown", uid),
       ("root", "chgrp", g2), ("user", "chgrp", g1),
       ("user", "chown", uid)]
for d in ["direct"] + [m.split("=")[0] for m in mnts.split(",")]:
    with open("%s/%s/cfsrc" % (S, d), "wb") as fh:
        fh.write(b"y" * 4096)
    os.chmod("%s/%s/cfsrc" % (S, d), 0o644)
for mnt in mnts.split(","):
    name, mdir = mnt.split("=")
    for mode in modes:
        cap = mode.endswith("/cap")
        m = int(mode.split("/")[0], 8)
        for o, g in owners:
            for actor, op, arg in ops:
                n += 1
                f = "c%d" % n
                res = []
                for d, via in (("direct", S + "/direct"), (name, mdir)):
                    p = "%s/%s/%s" % (S, d, f)
                    with open(p, "w") as fh:
                        fh.write("content\n")
                    os.chown(p, o, g)
                    os.chmod(p, m)
                    if cap:
                        os.setxattr(p, "security.capability", CAP)
                    os.stat(via + "/" + f)  # the kernel caches the mode
                    out = as_actor(actor, op, via + "/" + f, arg)
                    res.append(out + " -> " + left(p))
                    # The mode the mount shows at once is the one of the
                    # backing (no stale setuid/setgid cached by the kernel;
                    # a statx for the mode alone, as exec and permission
                    # checks use it: a full stat refreshes more).
                    seen = mode_only(via + "/" + f)
                    if seen != os.stat(p).st_mode & 0o7777:
                        print("FAIL: %s: mode %s owner %d:%d: %s by %s: the "
                              "mount shows mode %o, the backing has %o" % (
                              name, mode, o, g, op, actor, seen,
                              os.stat(p).st_mode & 0o7777), file=sys.stderr)
                        bad = 1
                what = "%s: mode %s owner %d:%d: %s %s by %s" % (
                    name, mode, o, g, op, "" if arg is None else arg, actor)
                want = res[0]
                # Documented difference (docs/reliability.md): with
                # no_default_permissions the kernel removes the capability
                # before the chown is refused; the daemon lets it go for a
                # caller who may write the file (any write would drop it).
                if (name == "nodp" and cap and actor == "user" and
                        op in ("chown", "chgrp") and
                        want.startswith("EPERM") and
                        user_may_write(m, o, g)):
                    want = want[:-3] + "-"
                if want != res[1]:
                    print("FAIL: %s: backing %s (expected %s); mount %s" % (
                          what, res[0], want, res[1]), file=sys.stderr)
                    bad = 1
                else:
                    print("same: %s: %s" % (what, res[0]))
print("%d cases" % n)
sys.exit(bad)
'
mkdir -m 0755 "$S/direct" "$S/kernel" "$S/directmode" "$S/nodp"
M1=$AFS_WORK/mnt-kernel M2=$AFS_WORK/mnt-direct M3=$AFS_WORK/mnt-nodp
mkdir -p "$M1" "$M2" "$M3"
AFS_MNT=$M1 afs_mount -o allow_other,watch=off
AFS_MNT=$M2 afs_mount -o allow_other,read_mode=direct,watch=off
AFS_MNT=$M3 afs_mount -o allow_other,no_default_permissions,watch=off
rc=0
python3 -c "$matrix_py" "$S" \
	"kernel=$M1/kernel,directmode=$M2/directmode,nodp=$M3/nodp" \
	"$AFS_UID" "$AFS_GID" "$AFS_G1" "$AFS_G2" "$AFS_WORK/capref" || rc=1
for i in 2 1 0; do
	AFS_MNT=${_afs_fuse_mnts[$i]} AFS_PID=${_afs_pids[$i]} \
		AFS_LOG=$AFS_WORK/daemon.$((i + 1)).log afs_umount
done
[ "$rc" -eq 0 ] || afs_fail "kill-privilege outcomes differ (lines above)"
