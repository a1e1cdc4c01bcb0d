#!/usr/bin/env bash
# faults.sh - faults on the backing, injected into the daemon's own backing
# I/O by the test-only LD_PRELOAD shim (libafs_fault.so, fault_shim.c), on
# a real ext4 volume (the readahead reads use preadv on an O_DIRECT fd),
# in read_mode=direct so that aheadfs sees every read, and passthrough=off
# so that it makes every write (passthrough writes are the kernel's, which
# the shim does not see):
#   EIO    on 16 pages of a file: a sequential reader of the pages before
#          them (whose readahead covers them: the shim saw those reads)
#          gets every byte; a reader of a faulty page gets EIO; a reader of
#          the pages after them gets its bytes; once the fault clears the
#          same pages read correctly (nothing was cached from the failure);
#          a reader whose own pages share one backing read with faulty
#          ones gets its bytes
#   short  reads cut to one page: every byte correct; cut to 1000 bytes
#          (inside the file: not EOF): correct bytes or EIO, never zeros,
#          and correct once the fault clears
#   ENOSPC a full disk at 1 MiB: a writer through the mount sees what the
#          same writer sees on the backing with the same fault (bytes
#          claimed written, the error), and the file holds exactly those
#   stall  a backing write that stalls: readers of another file are
#          served, the write completes when the stall ends;
#          backing reads of one file that never return, met by three
#          readers: readers of another file are served meanwhile; another
#          reader of the stalled file, waiting for a page under the stalled
#          I/O, stops waiting when it is killed; when the stall ends every
#          reader finishes with correct bytes and the daemon is still
#          mounted.  (A reader whose own backing read stalls cannot be
#          interrupted: docs/reliability.md.)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
SHIM=$(realpath "$AFS_TESTBIN/libafs_fault.so" 2>/dev/null) ||
	afs_fail "$AFS_TESTBIN/libafs_fault.so missing (build the tests)"

afs_loop_ext4 256
CTL=$AFS_WORK/faults
: >"$CTL"
rules()
{
	printf '%s\n' "$@" >"$CTL.new"
	mv "$CTL.new" "$CTL"
}
hits()
{
	grep -c "$1" "$CTL.hits" 2>/dev/null || true
}
for f in A:1 E:2 S1:5 S2:6 C:3 D:4; do
	"$AC_IO" fill "$AFS_SRC/${f%:*}" 8M "${f#*:}"
done
sync
# A sanitizer runtime would insist on coming first in the library list.
LD_PRELOAD=$SHIM AFS_FAULT_CTL=$CTL \
	ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0 \
	afs_mount -o read_mode=direct,passthrough=off
M=$AFS_MNT

# --- EIO on pages 1024..1039 of A.
FIRST=$((4 << 20)) END=$(((4 << 20) + (64 << 10)))
rules "read /A $FIRST $END eio"
"$AC_IO" check "$M/A" 1 128K 0 "$FIRST" ||
	afs_fail "EIO: a reader of the pages before the faulty ones failed"
[ "$(hits "read .*/A ")" -gt 0 ] ||
	afs_fail "EIO: readahead never touched the faulty pages (test is void)"
echo "EIO: readahead hit the faulty range $(hits "read .*/A ") times, unseen"
out=$("$AC_IO" check "$M/A" 1 4K "$FIRST" 4K 2>&1) &&
	afs_fail "EIO: a read of a faulty page succeeded"
case $out in *"Input/output error"*) ;; *) afs_fail "EIO: got '$out'" ;; esac
out=$("$AC_IO" check "$M/A" 1 4K $((END - 4096)) 4K 2>&1) &&
	afs_fail "EIO: a read of the last faulty page succeeded"
"$AC_IO" check "$M/A" 1 64K "$END" 1M ||
	afs_fail "EIO: a reader of the pages after the faulty ones failed"
# A first read at 0 opens a window whose readahead part (pages 16..63,
# one backing read) fails slowly for its first 16 pages: a reader of
# pages 48..63 meanwhile waits on that read, and gets its bytes.
rules "read /E 65536 131072 slow_eio 1000"
"$AC_IO" check "$M/E" 2 64K 0 64K >/dev/null || afs_fail "EIO: E's first read"
"$AC_IO" check "$M/E" 2 64K 196608 64K ||
	afs_fail "EIO: a reader sharing a backing read with faulty pages failed"
[ "$(hits "read .*/E 65536 196608 ")" -gt 0 ] ||
	afs_fail "EIO: no backing read of E covered both (test is void)"
rules
"$AC_IO" check "$M/A" 1 4K "$FIRST" 64K ||
	afs_fail "EIO: the faulty pages do not read back once the fault cleared"
"$AC_IO" check "$M/A" 1 1M >/dev/null || afs_fail "EIO: A after the fault"

# --- Short reads (a page; 1000 bytes: not a page multiple).
rules "read /S1 0 -1 short 4096"
"$AC_IO" check "$M/S1" 5 1M >/dev/null || afs_fail "short reads of a page"
# On the O_DIRECT backing fd only whole pages can be asked again: a file
# that keeps answering 1000 bytes is an I/O error, never zeros as data.
rules "read /S2 0 -1 short 1000"
out=$("$AC_IO" check "$M/S2" 6 1M 2>&1) ||
	case $out in *"Input/output error"*) ;; *) afs_fail "short 1000: $out" ;; esac
rules
"$AC_IO" check "$M/S2" 6 1M >/dev/null || afs_fail "short reads: S2 afterwards"

# --- ENOSPC at 1 MiB: the same writer on the backing (shim preloaded into
# it) and through the mount.
writer_py='
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
buf = bytes(range(256)) * 1536  # 384 KiB
off = 0
res = "ok"
while off < 2 << 20:
    try:
        n = os.pwrite(fd, buf, off)
    except OSError as e:
        res = errno.errorcode[e.errno]
        break
    off += n
try:
    os.close(fd)
except OSError as e:
    res += " close " + errno.errorcode[e.errno]
print("claimed %d %s" % (off, res))
'
mkdir "$AFS_SRC/w"
rules "write /wfile 1048576 -1 enospc"
want=$(LD_PRELOAD=$SHIM AFS_FAULT_CTL=$CTL python3 -c "$writer_py" \
	"$AFS_EXT4/wfile")
got=$(python3 -c "$writer_py" "$M/w/wfile")
rules
echo "ENOSPC: backing: $want; mount: $got"
[ "$want" = "$got" ] || afs_fail "ENOSPC: backing '$want', mount '$got'"
cmp "$AFS_EXT4/wfile" "$AFS_SRC/w/wfile" ||
	afs_fail "ENOSPC: the file through the mount differs from the backing's"

# --- A backing write that stalls: readers of other files are served, and
# the write completes with its bytes once the stall ends.
rules "write /wstall 0 -1 stall"
python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.pwrite(fd, b"z" * 65536, 0)
os.close(fd)' "$M/w/wstall" &
wpid=$!
n=0
until [ "$(hits "write .*/wstall ")" -gt 0 ]; do
	[ "$n" -lt 100 ] || afs_fail "write stall: the write never reached the backing"
	sleep 0.1
	n=$((n + 1))
done
timeout 20 "$AC_IO" check "$M/D" 4 1M >/dev/null ||
	afs_fail "write stall: a reader of another file was blocked"
kill -0 "$wpid" 2>/dev/null || afs_fail "write stall: the write did not wait"
rules
wait "$wpid" || afs_fail "write stall: the write failed after the stall"
[ "$(head -c 65536 "$AFS_SRC/w/wstall" | tr -d z | wc -c)" = 0 ] &&
	[ "$(stat -c %s "$AFS_SRC/w/wstall")" = 65536 ] ||
	afs_fail "write stall: the backing does not hold the written bytes"
echo "write stall: D served meanwhile, the write completed"

# --- Backing reads of C past 1 MiB that never return (the first page
# stays readable: the open's O_DIRECT probe reads it), met by three
# readers of C: three serving threads stuck in the backing.
rules "read /C 1048576 -1 stall"
cpids=()
for off in 1M 3M 5M; do
	"$AC_IO" check "$M/C" 3 1M "$off" 1M >"$AFS_WORK/c.$off.out" 2>&1 &
	cpids+=($!)
done
n=0
until [ "$(hits "read .*/C ")" -ge 3 ]; do
	[ "$n" -lt 100 ] || afs_fail "stall: the readers of C never reached the backing"
	sleep 0.1
	n=$((n + 1))
done
# Another file is served meanwhile.
timeout 20 "$AC_IO" check "$M/D" 4 1M >/dev/null ||
	afs_fail "stall: a reader of another file was blocked by the stalled ones"
# Another reader of C waits for a page under the stalled I/O; killed, it
# stops waiting.
"$AC_IO" check "$M/C" 3 4K $(((1 << 20) + (64 << 10))) 4K >/dev/null 2>&1 &
c2=$!
sleep 1
kill -0 "$c2" 2>/dev/null || afs_fail "stall: the waiting reader of C was not waiting"
kill -KILL "$c2"
n=0
while kill -0 "$c2" 2>/dev/null; do
	if [ "$n" -ge 100 ]; then
		cat "/proc/$c2/stack" >&2 || true
		afs_fail "stall: a killed reader is still waiting after 10 s"
	fi
	sleep 0.1
	n=$((n + 1))
done
wait "$c2" 2>/dev/null || true
echo "stall: D served, a killed waiter gone after $((n * 100)) ms"
rules
for p in "${cpids[@]}"; do
	wait "$p" || { cat "$AFS_WORK"/c.*.out >&2; afs_fail "stall: C after the stall"; }
done
"$AC_IO" check "$M/C" 3 1M >/dev/null || afs_fail "stall: C read again"
afs_umount
