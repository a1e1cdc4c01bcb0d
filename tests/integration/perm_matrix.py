#!/usr/bin/env python3
"""perm_matrix.py - an unprivileged user's permission matrix through an
allow_other mount, compared with the same user's outcomes on the backing.

Run as the user whose rights are tested (the "actor").  Each argument
after the first is NAME=BACKING_TWIN=MOUNTED_TWIN: two trees made alike by
perm_lib.sh's perm_make_tree, one reached on the backing, the other through
the mount (the mount's root is MOUNTED_TWIN's parent).  WORK is the
directory holding the mount point (what the mount root's ".." must be).

Every operation runs on both twins and the outcomes (errno name, or "ok"
and what was read) must be equal; user.aheadfs.* on a file must answer
what a user.* name on the backing answers for the same permission (EACCES
where the actor may not read, or for advice write, the file; a JSON value
where they may); listxattr never shows user.aheadfs.*; the root's tunables
are EPERM to the actor (neither root nor the mount's owner).

Usage: perm_matrix.py WORK NAME=BACKING=MOUNTED...
Prints the number of cases; one FAIL line per difference; exit 1 if any.
"""
import errno
import json
import os
import sys

ST = "user.aheadfs.stats"
FILES = ["pub", "secret", "wonly", "mine", "grp", "priv/f", "search/f",
         "list/f", "out_private", "out_public", "out_rel"]
DIRS = [".", "priv", "search", "list"]
LINKS = ["out_private", "out_public", "out_rel"]
bad = n = 0


def run(fn):
    try:
        return "ok " + str(fn())
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def check(what, want, got):
    global bad, n
    n += 1
    if want != got:
        print("FAIL: %s: expected %.80s (as on the backing), mount %.80s" %
              (what, want, got), file=sys.stderr)
        bad = 1


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


def ops_on(root):
    """The operations on one twin, in order; ROOT's parent is writable."""
    o = []
    for f in FILES:
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
    # Out of the file's directory into the mount's root (writable to all):
    # a hard link (the kernel's protected_hardlinks rule) and a rename,
    # each undone where it worked.
    top = os.path.dirname(root)
    tag = os.path.basename(root)
    for f in FILES:
        if f.startswith("out_"):
            continue
        p, q = root + "/" + f, "%s/%s-%s" % (top, tag, f.replace("/", "_"))
        o += [("link " + f, lambda p=p, q=q: (os.link(p, q), os.unlink(q))),
              ("rename out " + f,
               lambda p=p, q=q: (os.rename(p, q), os.rename(q, p)))]
    for lnk in LINKS:
        p = root + "/" + lnk
        o += [("lstat " + lnk, lambda p=p: statv(p, False)),
              ("lgetxattr " + lnk,
               lambda p=p: os.getxattr(p, "user.test",
                                       follow_symlinks=False)),
              ("lsetxattr " + lnk,
               lambda p=p: os.setxattr(p, "user.new", b"v",
                                       follow_symlinks=False))]
    for d in DIRS:
        p = root + "/" + d
        o += [("listdir " + d, lambda p=p: sorted(os.listdir(p))),
              ("create in " + d, lambda p=p: create(p + "/new")),
              ("rename in " + d,
               lambda p=p: os.rename(p + "/f", p + "/g")),
              ("unlink in " + d, lambda p=p: os.unlink(p + "/f"))]
    return o


def ours(name, b, root):
    """user.aheadfs.* on every file, before anything changed."""
    for f in FILES:
        p, q = b + "/" + f, root + "/" + f
        want = run(lambda: os.getxattr(p, "user.test"))
        for xn in (ST, "user.aheadfs.map"):
            got = run(lambda: os.getxattr(q, xn))
            if f.startswith("out_"):
                # outside the mount: the outside filesystem answers
                check("%s: %s of %s (outside SOURCE)" % (name, xn, f),
                      run(lambda: os.getxattr(p, xn)), got)
            elif want.startswith("ok"):
                check("%s: %s of readable %s" % (name, xn, f), "ok",
                      got[:2])
                if got.startswith("ok"):
                    v = json.loads(os.getxattr(q, xn))
                    if xn == ST and "file" not in v:
                        check("%s: stats of %s" % (name, f), "file", v)
            else:
                check("%s: %s of %s" % (name, xn, f), want, got)
        # advice needs write access, as a user.* setxattr on the backing
        if not f.startswith("out_"):
            want = run(lambda: os.setxattr(p, "user.probe", b"1"))
            if want.startswith("ok"):
                os.removexattr(p, "user.probe")
            check("%s: advice on %s" % (name, f), want,
                  run(lambda: os.setxattr(q, "user.aheadfs.advice",
                                          b"random")))
        got = run(lambda: sorted(os.listxattr(q)))
        check("%s: listxattr of %s" % (name, f),
              run(lambda: sorted(os.listxattr(p))), got)
        if "user.aheadfs" in got:
            check("%s: listxattr of %s shows aheadfs names" % (name, f),
                  "none", got)


def main():
    work = sys.argv[1]
    for arg in sys.argv[2:]:
        name, b, root = arg.split("=")
        ours(name, b, root)
        # The mount root (0777: the kernel lets the actor write it): its
        # stats for anyone who may read it, its tunables for root and the
        # mount's owner only.
        mnt = os.path.dirname(root)
        check("%s: root stats" % name, "ok",
              run(lambda: json.loads(os.getxattr(mnt, ST)) and "")[:2])
        for t, v in (("ra_max", b"65536"), ("context_ra", b"off"),
                     ("stream_table", b"off")):
            check("%s: setting %s" % (name, t), "EPERM",
                  run(lambda: os.setxattr(mnt, "user.aheadfs." + t, v)))
        # ".." of the mount root is the mount point's parent
        check("%s: .. of the mount" % name, sorted(os.listdir(work)),
              sorted(os.listdir(mnt + "/..")))
        # Every operation, on the backing twin and through the mount.
        for (what, fb), (_, fm) in zip(ops_on(b), ops_on(root)):
            check("%s: %s" % (name, what), run(fb), run(fm))
        # The actor is refused and allowed on the backing: the matrix can
        # tell the two apart.
        check("%s: sanity, secret" % name, "EACCES",
              run(lambda: readall(b + "/secret")))
        check("%s: sanity, pub" % name, "ok",
              run(lambda: readall(b + "/pub"))[:2])
    print("%d cases" % n)
    sys.exit(bad)


main()
