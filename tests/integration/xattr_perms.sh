#!/usr/bin/env bash
# xattr_perms.sh - the permission matrix of an allow_other mount run by
# root, as an unprivileged user sees it (differential: every case runs on a
# tree of the backing and on its twin through the mount, and the outcomes
# must be equal):
#   - the user reads, writes, truncates, chmods, lists, stats, creates,
#     renames and unlinks exactly what the backing lets them (files 0644,
#     0600, 0602, the user's own, group-readable through a supplementary
#     group; directories 0700, 0711, 0744), and gets, sets, lists and
#     removes user.* attributes exactly as there;
#   - user.aheadfs.* on each file answers what a user.* name on the backing
#     answers for the permission: a file the user may not read gives EACCES
#     for stats and map (no figure leaks, though root read it through the
#     mount first so it has cache state), a file the user may not write
#     gives EACCES for advice; where the backing allows, stats is a JSON
#     object and advice is taken; listxattr never shows user.aheadfs.*;
#   - the mount-wide tunables on the root are refused (EPERM) to a user who
#     is neither root nor the mount's owner, and left unchanged;
#   - SOURCE cannot be left: a symlink out of SOURCE is resolved by the
#     kernel as on the backing (the outside file's own rights, never the
#     daemon's; user.aheadfs.* through it is the outside filesystem's
#     answer), and the root's ".." is the mount point's parent.
# Two mounts: the default (the kernel checks: default_permissions) and
# no_default_permissions (the daemon and the backing check as the caller).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_test_user
command -v python3 >/dev/null || afs_fail "python3 missing"
command -v setfattr >/dev/null || afs_fail "setfattr missing (package attr)"

S=$AFS_SRC
OUT=$AFS_WORK/outside
mkdir -m 0755 "$OUT"
echo "outside, private" >"$OUT/private"
chmod 0600 "$OUT/private"
echo "outside, public" >"$OUT/public"
chmod 0644 "$OUT/public"

head -c 20000 /dev/urandom >"$AFS_WORK/blob"
# make_tree DIR: the same files, modes, owners and attributes in each twin.
make_tree()
{
	local d=$1 f
	mkdir -m 0755 "$d"
	for f in pub secret wonly mine grp; do
		cp "$AFS_WORK/blob" "$d/$f"
		setfattr -n user.test -v "value of $f" "$d/$f"
	done
	chmod 0644 "$d/pub"
	chmod 0600 "$d/secret"
	chmod 0602 "$d/wonly"
	chown "$AFS_UID:$AFS_GID" "$d/mine"
	chmod 0600 "$d/mine"
	chgrp afs-test-g1 "$d/grp"
	chmod 0640 "$d/grp"
	local sub mode
	for sub in priv:0700 search:0711 list:0744; do
		mode=${sub#*:}
		sub=${sub%:*}
		mkdir -m 0755 "$d/$sub"
		echo "in $sub" >"$d/$sub/f"
		chmod 0644 "$d/$sub/f"
		setfattr -n user.test -v "value of $sub/f" "$d/$sub/f"
		chmod "$mode" "$d/$sub"
	done
	ln -s "$OUT/private" "$d/out_private"
	ln -s "$OUT/public" "$d/out_public"
	ln -s ../../outside/public "$d/out_rel"
}

chmod 0777 "$S"
make_tree "$S/bk"
make_tree "$S/bn"
make_tree "$S/k"
make_tree "$S/n"
MK=$AFS_WORK/mnt-k MN=$AFS_WORK/mnt-n
mkdir -p "$MK" "$MN"
AFS_MNT=$MK afs_mount -o allow_other
AFS_MNT=$MN afs_mount -o allow_other,no_default_permissions
# Root reads everything through the mounts first: the daemon then holds
# cache state and stats for every file, secret ones included.
for m in "$MK/k" "$MN/n"; do
	for f in pub secret wonly mine grp priv/f search/f list/f; do
		cat "$m/$f" >/dev/null
		getfattr -n user.aheadfs.stats "$m/$f" >/dev/null 2>&1
	done
done
ra_before=$(getfattr -n user.aheadfs.ra_max --only-values "$MK" 2>/dev/null)

matrix_py='
import errno, json, os, sys
pairs, work = sys.argv[1], sys.argv[2]
ST = "user.aheadfs.stats"

def err(e):
    return errno.errorcode.get(e.errno, str(e.errno))

def run(fn):
    try:
        return "ok " + str(fn())
    except OSError as e:
        return err(e)

def readall(p):
    with open(p, "rb") as f:
        return len(f.read())

def writeone(p):
    fd = os.open(p, os.O_WRONLY)
    try:
        return os.pwrite(fd, b"w", 5)
    finally:
        os.close(fd)

def create(p):
    os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    os.unlink(p)

def statv(p, follow=True):
    st = os.stat(p, follow_symlinks=follow)
    return "%o %d:%d %d" % (st.st_mode, st.st_uid, st.st_gid, st.st_size)

files = ["pub", "secret", "wonly", "mine", "grp", "priv/f", "search/f",
         "list/f", "out_private", "out_public", "out_rel"]
dirs = [".", "priv", "search", "list"]
links = ["out_private", "out_public", "out_rel"]

def ops_on(root):
    o = []
    for f in files:
        p = root + "/" + f
        o += [("read " + f, lambda p=p: readall(p)),
              ("stat " + f, lambda p=p: statv(p)),
              ("getxattr " + f, lambda p=p: os.getxattr(p, "user.test")),
              ("listxattr " + f, lambda p=p: sorted(os.listxattr(p))),
              ("write " + f, lambda p=p: writeone(p)),
              ("setxattr " + f,
               lambda p=p: os.setxattr(p, "user.new", b"v")),
              ("removexattr " + f,
               lambda p=p: os.removexattr(p, "user.new")),
              ("chmod " + f, lambda p=p: os.chmod(p, 0o666)),
              ("truncate " + f, lambda p=p: os.truncate(p, 100))]
    for l in links:
        p = root + "/" + l
        o += [("lstat " + l, lambda p=p: statv(p, False)),
              ("lgetxattr " + l,
               lambda p=p: os.getxattr(p, "user.test",
                                       follow_symlinks=False)),
              ("lsetxattr " + l,
               lambda p=p: os.setxattr(p, "user.new", b"v",
                                       follow_symlinks=False))]
    for d in dirs:
        p = root + "/" + d
        o += [("listdir " + d, lambda p=p: sorted(os.listdir(p))),
              ("create in " + d, lambda p=p: create(p + "/new")),
              ("rename in " + d,
               lambda p=p: os.rename(p + "/f", p + "/g")),
              ("unlink in " + d, lambda p=p: os.unlink(p + "/f"))]
    return o

bad = n = 0
def check(what, want, got):
    global bad, n
    n += 1
    if want != got:
        print("FAIL: %s: expected %s (as on the backing), mount %s" % (
              what, want, got),
              file=sys.stderr)
        bad = 1

for pair in pairs.split(","):
    # NAME=BACKING_TWIN=TWIN_THROUGH_THE_MOUNT
    name, B, root = pair.split("=")
    # The tree as the user finds it, before any change.
    for f in files:
        p, q = B + "/" + f, root + "/" + f
        b = run(lambda: os.getxattr(p, "user.test"))
        for xn in (ST, "user.aheadfs.map"):
            g = run(lambda: os.getxattr(q, xn))
            if f.startswith("out_"):
                # outside the mount: the outside filesystem answers
                check("%s: %s of %s (outside SOURCE)" % (name, xn, f),
                      run(lambda: os.getxattr(p, xn)), g)
            elif b.startswith("ok"):
                check("%s: %s of readable %s" % (name, xn, f), "ok", g[:2])
                if g.startswith("ok"):
                    v = json.loads(os.getxattr(q, xn))
                    if xn == ST and "file" not in v:
                        check("%s: stats of %s" % (name, f), "file", v)
            else:
                check("%s: %s of %s" % (name, xn, f), b, g)
        # advice needs write access, as a user.* setxattr on the backing
        if not f.startswith("out_"):
            b = run(lambda: os.setxattr(p, "user.probe", b"1"))
            if b.startswith("ok"):
                os.removexattr(p, "user.probe")
            g = run(lambda: os.setxattr(q, "user.aheadfs.advice", b"random"))
            check("%s: advice on %s" % (name, f), b, g)
        # listxattr: the same names; never an aheadfs one
        g = run(lambda: sorted(os.listxattr(q)))
        check("%s: listxattr of %s" % (name, f),
              run(lambda: sorted(os.listxattr(p))), g)
        if "user.aheadfs" in g:
            check("%s: listxattr of %s shows aheadfs names" % (name, f),
                  "none", g)
    # The mount root (0777: the kernel lets the user write it): its stats
    # for anyone who may read it; its tunables for root and the owner only.
    mnt = os.path.dirname(root)
    check("%s: root stats" % name, "ok",
          run(lambda: json.loads(os.getxattr(mnt, ST)) and "")[:2])
    for t, v in (("ra_max", b"65536"), ("context_ra", b"off"),
                 ("stream_table", b"off")):
        check("%s: setting %s" % (name, t), "EPERM",
              run(lambda: os.setxattr(mnt, "user.aheadfs." + t, v)))
    # ".." of the mount root is the mount point'"'"'s parent, not SOURCE'"'"'s
    check("%s: .. of the mount" % name, sorted(os.listdir(work)),
          sorted(os.listdir(mnt + "/..")))
    # Every operation, on the backing twin and through the mount.
    for (what, fb), (_, fm) in zip(ops_on(B), ops_on(root)):
        check("%s: %s" % (name, what), run(fb), run(fm))
    # Sanity: the user is refused and allowed on the backing.
    for must, got in (("EACCES", run(lambda: readall(B + "/secret"))),
                      ("ok", run(lambda: readall(B + "/pub"))[:2])):
        check("%s: sanity" % name, must, got)
print("%d cases" % n)
sys.exit(bad)
'
rc=0
afs_as_user python3 -c "$matrix_py" \
	"default=$S/bk=$MK/k,nodp=$S/bn=$MN/n" "$AFS_WORK" >"$AFS_WORK/matrix.out" || rc=$?
cat "$AFS_WORK/matrix.out"
[ "$rc" -eq 0 ] || afs_fail "the user's outcomes differ from the backing's (lines above)"
# The refused tunables did not change.
[ "$(getfattr -n user.aheadfs.ra_max --only-values "$MK" 2>/dev/null)" = "$ra_before" ] ||
	afs_fail "a refused ra_max changed the tunable"
[ "$(getfattr -n user.aheadfs.context_ra --only-values "$MN" 2>/dev/null)" = on ] ||
	afs_fail "a refused context_ra changed the tunable"
# The backing twins agree (the mount changed what the backing changed).
for f in pub secret wonly mine grp; do
	for t in k n; do
		cmp -s "$S/b$t/$f" "$S/$t/$f" || afs_fail "$t/$f differs from b$t/$f"
		[ "$(stat -c %a "$S/b$t/$f")" = "$(stat -c %a "$S/$t/$f")" ] ||
			afs_fail "$t/$f's mode differs from b$t/$f's"
	done
done
for i in 1 0; do
	AFS_MNT=${_afs_fuse_mnts[$i]} AFS_PID=${_afs_pids[$i]} \
		AFS_LOG=$AFS_WORK/daemon.$((i + 1)).log afs_umount
done
