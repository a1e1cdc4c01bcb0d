#!/usr/bin/env bash
# warm_restart.sh - a server's first minute after a restart, with and
# without -o warm_state: the hot part of a file (HOT_MIB in 1 MiB ranges
# scattered over a FILE_MIB file) is read once through a mount that saves
# its map, the daemon is unmounted, the caches dropped, and a new daemon
# mounted -- cold (no warm_state) or warm (the saved map) -- over a
# direct-I/O loop device throttled to IOPS reads a second (blkio cgroup),
# the cost model of disks.  DELAY seconds later (the clients coming back
# after the restart; the same wait in both variants) a paced reader
# (RATE requests a second
# of 64 KiB at random offsets inside the hot ranges, as a server's clients
# would ask) starts and runs for SECONDS.  Printed per variant and per
# BUCKET seconds: requests served, their median and 99th percentile
# latency, and the device's read I/Os; then the first minute's totals.
#
# Usage (root, from the build dir, like the integration tests):
#   AHEADFS=fs/aheadfs bash ../tests/bench/warm_restart.sh \
#       [SECONDS [RATE [IOPS]]]
#   SECONDS  the reader's run (default 60); RATE requests a second
#            (default 100); IOPS the device's read limit (default 300)
# Knobs: FILE_MIB (default 512), HOT_MIB (default 96), BUCKET (default 5),
# DELAY (default 5).
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"
afs_require_fuse
afs_require_root
SECONDS_RUN=${1:-60}
RATE=${2:-100}
IOPS=${3:-300}
FILE_MIB=${FILE_MIB:-512}
HOT_MIB=${HOT_MIB:-96}
BUCKET=${BUCKET:-5}
DELAY=${DELAY:-5}
afs_loop_ext4 $((FILE_MIB + 128))
head -c "${FILE_MIB}M" /dev/urandom >"$AFS_SRC/big"
sync
dev=$(basename "$AFS_LOOPDEV")
majmin=$(cat "/sys/block/$dev/dev")
STATE=$AFS_WORK/warm.state

blkio=/sys/fs/cgroup/blkio
[ -w "$blkio/cgroup.procs" ] || afs_fail "no writable blkio cgroup (v1)"
CG=$blkio/afs-warm-bench.$$
mkdir "$CG"
trap 'rmdir "$CG" 2>/dev/null || true' EXIT
echo "$majmin $IOPS" >"$CG/blkio.throttle.read_iops_device"
echo $$ >"$CG/cgroup.procs" # this shell, the daemons and the readers

# The hot ranges: HOT_MIB distinct 1 MiB ranges, seeded.
hot=$(python3 -c "
import random
r = random.Random(7)
print(' '.join(str(x) for x in sorted(r.sample(range($FILE_MIB), $HOT_MIB))))")

prime_py='
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for mib in sys.argv[2].split():
    off = int(mib) << 20
    left = 1 << 20
    while left:
        n = len(os.pread(fd, left, off + (1 << 20) - left))
        left -= n
os.close(fd)
'

reader_py='
import os, random, sys, time
path, hot, secs, rate, bucket, stat = sys.argv[1:7]
hot = [int(x) << 20 for x in hot.split()]
secs, rate, bucket = float(secs), float(rate), float(bucket)
def dev_reads():
    return int(open(stat).read().split()[0])
r = random.Random(11)
lat = []  # (t, latency)
fd = os.open(path, os.O_RDONLY)
t0 = time.monotonic()
nxt = t0
marks = [(0.0, dev_reads())]
while True:
    now = time.monotonic()
    if now - t0 >= secs:
        break
    if now < nxt:
        time.sleep(nxt - now)
    nxt += 1.0 / rate
    off = r.choice(hot) + r.randrange(16) * 65536
    a = time.monotonic()
    os.pread(fd, 65536, off)
    b = time.monotonic()
    lat.append((a - t0, b - a))
    if (b - t0) >= bucket * len(marks):
        marks.append((b - t0, dev_reads()))
marks.append((time.monotonic() - t0, dev_reads()))
os.close(fd)
def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else 0.0
for k in range(int(secs // bucket)):
    lo, hi = k * bucket, (k + 1) * bucket
    xs = [l for t, l in lat if lo <= t < hi]
    d0 = min(marks, key=lambda m: abs(m[0] - lo))[1]
    d1 = min(marks, key=lambda m: abs(m[0] - hi))[1]
    print("  %3.0f-%3.0f s: %5d requests, p50 %7.2f ms, p99 %7.2f ms, device reads %d"
          % (lo, hi, len(xs), 1e3 * pct(xs, 0.5), 1e3 * pct(xs, 0.99), d1 - d0))
xs = [l for t, l in lat]
print("  all: %d requests, p50 %.2f ms, p99 %.2f ms, mean %.2f ms, device reads %d"
      % (len(xs), 1e3 * pct(xs, 0.5), 1e3 * pct(xs, 0.99),
         1e3 * sum(xs) / max(len(xs), 1), marks[-1][1] - marks[0][1]))
'

# Prime: read the hot ranges once through a mount that saves its map.
rm -f "$STATE"
afs_mount -o "warm_state=$STATE"
python3 -c "$prime_py" "$AFS_MNT/big" "$hot"
afs_umount
[ -s "$STATE" ] || afs_fail "no state file written"

for variant in cold warm; do
	afs_drop_caches
	if [ "$variant" = warm ]; then
		afs_mount -o "warm_state=$STATE"
	else
		afs_mount
	fi
	stat "$AFS_MNT" >/dev/null
	sleep "$DELAY"
	echo "$variant ($HOT_MIB MiB hot of $FILE_MIB MiB, $RATE requests/s of 64 KiB after ${DELAY} s, device $IOPS IOPS):"
	python3 -c "$reader_py" "$AFS_MNT/big" "$hot" "$SECONDS_RUN" "$RATE" \
		"$BUCKET" "/sys/block/$dev/stat"
	if [ "$variant" = warm ]; then
		ac=$(getfattr --only-values -n user.aheadfs.stats "$AFS_MNT" |
			python3 -c 'import json, sys; w = json.load(sys.stdin)["warm"]; print("warm-up: %d files, %d MiB read back, %d pauses for readers" % (w["files"], w["bytes"] >> 20, w["pauses"]))')
		echo "  $ac"
	fi
	afs_umount
done
