#!/usr/bin/env bash
# churn.sh - several processes create, write, link, rename, unlink, stat and
# list the same names at once through the mount while the kernel forgets
# inodes (drop_caches): afterwards the daemon is alive, the tree seen through
# the mount equals the backing's, hard-link inode numbers agree, and once the
# kernel forgets everything the daemon's fds are back near where they began
# (lookup counts survived the races).  Seeded; AFS_SEED=N replays the
# operation choices (not the interleaving).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_require_root
seed=${AFS_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "churn: seed $seed"
mkdir "$AFS_SRC/a" "$AFS_SRC/b"
afs_mount
base_fds=$(afs_daemon_fds)

python3 - "$AFS_MNT" "$seed" <<'PY'
import errno, os, random, sys, multiprocessing as mp

root, seed = sys.argv[1], int(sys.argv[2])
OK = {errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR,
      errno.ENOTDIR, errno.ELOOP}

def worker(k):
    rnd = random.Random(seed * 131 + k)
    def name():
        return os.path.join(root, rnd.choice("ab"), "n%d" % rnd.randrange(40))
    for i in range(10000):
        op = rnd.randrange(10)
        p, q = name(), name()
        try:
            if op == 0:
                with open(p, "ab") as f:
                    f.write(b"%d:%d\n" % (k, i))
            elif op == 1:
                os.rename(p, q)
            elif op == 2:
                os.unlink(p)
            elif op == 3:
                os.link(p, q)
            elif op == 4:
                os.mkdir(p)
            elif op == 5:
                os.rmdir(p)
            elif op == 6:
                os.stat(p)
            elif op == 7:
                os.listdir(os.path.dirname(p))
            elif op == 8:
                with open(p, "rb") as f:
                    f.read()
            else:
                os.symlink("n%d" % rnd.randrange(40), p)
        except OSError as e:
            # link(2) of a directory is EPERM, also on the backing.
            if e.errno not in OK and not (op == 3 and e.errno == errno.EPERM):
                print("worker %d op %d on %s: %s" % (k, op, p, e), flush=True)
                return 1
    return 0

def forgetter(stop):
    while not stop.is_set():
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("2\n")
        stop.wait(0.05)

stop = mp.Event()
fp = mp.Process(target=forgetter, args=(stop,))
fp.start()
with mp.Pool(4) as pool:
    bad = sum(pool.map(worker, range(4)))
stop.set()
fp.join()
sys.exit(1 if bad else 0)
PY
kill -0 "$AFS_PID" || afs_fail "daemon died"

listing()
{
	(cd "$1" && find . -printf '%P %y %s %n %l\n' | sort)
}
diff <(listing "$AFS_SRC") <(listing "$AFS_MNT") >&2 ||
	afs_fail "the tree through the mount differs from the backing"
# Hard links: same backing inode <=> same inode through the mount.
paste -d' ' <(cd "$AFS_SRC" && find . -printf '%i %P\n' | sort -k2 | cut -d' ' -f1) \
	<(cd "$AFS_MNT" && find . -printf '%i %P\n' | sort -k2 | cut -d' ' -f1) |
	sort -u >"$AFS_WORK/pairs"
[ "$(cut -d' ' -f1 "$AFS_WORK/pairs" | sort -u | wc -l)" -eq "$(wc -l <"$AFS_WORK/pairs")" ] &&
	[ "$(cut -d' ' -f2 "$AFS_WORK/pairs" | sort -u | wc -l)" -eq "$(wc -l <"$AFS_WORK/pairs")" ] ||
	afs_fail "inode numbers through the mount do not match the backing's one to one"

afs_wait_fds_back "$base_fds" "the kernel forgot everything"
afs_umount
