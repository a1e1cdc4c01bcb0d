#!/usr/bin/env bash
# warm_restart.sh - -o warm_state=PATH (fs/warm/warm.h), in both read modes
# (in kernel mode the hot pages are saved as the history they became):
#   - mount, read files (direct mode: ranges of one), unmount: the state file is written 0600;
#     a file changed while unmounted; drop caches, remount: once the
#     warm-up is done (warm.pending 0) reading those ranges reaches no
#     backing I/O (the mount's backing reads and the file's misses stay
#     put, the loop device reads no data), the bytes are right; the changed
#     file was not warmed (warm.skipped) and reads its new bytes;
#   - a corrupted state file (one byte flipped), a truncated one and one
#     others may write are refused with a clear message: the mount works,
#     cold;
#   - a SIGKILLed daemon's last checkpoint (warm_interval=1) is what the
#     next mount warms up;
#   - the throttle: with warm_rate=1M, 8 MiB take at least 6 s to warm up,
#     and a cold reader during it makes the warm-up pause (warm.pauses).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root

M=$AFS_MNT
STATE=$AFS_WORK/warm.state
OPTS="read_mode=$AC_MODE,warm_state=$STATE,warm_interval=1"
afs_loop_ext4 128
S=$AFS_SRC
dev=$(basename "$AFS_LOOPDEV")
"$AC_IO" fill "$S/a" 8M 11
"$AC_IO" fill "$S/b" 4M 21
"$AC_IO" fill "$S/c" 4M 31
sync

sectors() { awk '{ print $3 }' "/sys/block/$dev/stat"; }

# Poll the mount's stats until the warm-up is over; print them.
warm_done()
{
	local i js
	for i in $(seq 1 300); do
		js=$(ac_stats "$M")
		if [ "$(ac_get "$js" warm.pending)" = 0 ]; then
			echo "$js"
			return 0
		fi
		sleep 0.1
	done
	ac_assert "$js" "g('warm.pending') == 0" "the warm-up did not finish in 30 s"
}

# b's ranges: two 1 MiB ranges in direct mode; in kernel mode the whole
# file, since the kernel's own readahead past a range reads more or less
# of what follows depending on timing (a replay may ask for pages the
# first run did not).  Ranges in kernel mode: tests/unit/warm/test_save.c.
read_b()
{
	if [ "$AC_MODE" = direct ]; then
		"$AC_IO" check "$M/b" 21 64K 0 1M >/dev/null &&
			"$AC_IO" check "$M/b" 21 64K 2M 1M >/dev/null
	else
		"$AC_IO" check "$M/b" 21 >/dev/null
	fi
}

# Wait until the daemon took a checkpoint after now.
checkpoint_after()
{
	local base i
	base=$(ac_get "$(ac_stats "$M")" warm.checkpoints)
	for i in $(seq 1 100); do
		[ "$(ac_get "$(ac_stats "$M")" warm.checkpoints)" -ge $((base + 2)) ] &&
			return 0
		sleep 0.1
	done
	afs_fail "no checkpoint in 10 s with warm_interval=1"
}

# --- 1. unmount saves; remount warms; the ranges read with no backing I/O.
afs_mount -o "$OPTS"
grep -q "none yet, starting cold" "$AFS_LOG" ||
	afs_fail "no 'starting cold' line for a missing state file"
"$AC_IO" check "$M/a" 11 >/dev/null || afs_fail "first read of a"
read_b || afs_fail "first read of b"
"$AC_IO" check "$M/c" 31 >/dev/null || afs_fail "first read of c"
afs_umount
[ -f "$STATE" ] || afs_fail "no state file after the unmount"
[ "$(stat -c %a "$STATE")" = 600 ] ||
	afs_fail "state file mode $(stat -c %a "$STATE"), not 600"
echo "state file: $(stat -c %s "$STATE") bytes"
sleep 0.05 # a later mtime on coarse clocks
"$AC_IO" fill "$S/c" 4M 32 # changed while unmounted
sync
afs_drop_caches

t0=$(date +%s.%N)
afs_mount -o "$OPTS"
root=$(warm_done)
t1=$(date +%s.%N)
ac_assert "$root" "g('warm.files') == 2 and g('warm.skipped') == 1" \
	"a and b warmed, the changed c skipped"
ac_assert "$root" "g('warm.bytes') >= $(((8 + 2) << 20))" "the saved ranges were read back"
echo "warm-up: $(ac_get "$root" warm.bytes) bytes in" \
	"$(python3 -c "print('%.2f' % ($t1 - $t0))") s (mount included)," \
	"$(ac_get "$root" warm.pauses) pauses"
reads0=$(ac_get "$root" backing.reads)
s0=$(sectors)
"$AC_IO" check "$M/a" 11 >/dev/null || afs_fail "[warm] wrong bytes in a"
read_b || afs_fail "[warm] wrong bytes in b"
s1=$(sectors)
root=$(ac_stats "$M")
ac_assert "$root" "g('backing.reads') == $reads0" \
	"reads of warmed ranges reached the backing"
ac_assert "$(ac_stats "$M/a")" "g('cache.misses') == 0"
# Metadata may be read (an inode block); the files' 10 MiB are not.
[ $((s1 - s0)) -lt 2048 ] ||
	afs_fail "the loop device read $((s1 - s0)) sectors for warmed ranges"
echo "warmed reads: 0 backing reads, $((s1 - s0)) loop sectors"
"$AC_IO" check "$M/c" 32 >/dev/null || afs_fail "stale bytes of c, changed while unmounted"
afs_umount

# --- 2. malformed state files: refused, the mount works cold.
refused()
{
	local what=$1
	afs_mount -o "$OPTS"
	grep -q "warm_state $STATE refused ($2" "$AFS_LOG" || {
		cat "$AFS_LOG" >&2
		afs_fail "$what: no clear refusal in the log"
	}
	ac_assert "$(ac_stats "$M")" "g('warm.refused') == 1 and g('warm.files') == 0"
	"$AC_IO" check "$M/a" 11 >/dev/null || afs_fail "$what: read after refusal"
	echo "$what: $(grep -o 'refused (.*' "$AFS_LOG" | head -1)"
	afs_umount # writes a good file again
}
size=$(stat -c %s "$STATE")
printf '\x5a' | dd of="$STATE" bs=1 seek=$((size / 2)) conv=notrunc status=none
refused "flipped byte" "checksum mismatch"
truncate -s $(($(stat -c %s "$STATE") - 7)) "$STATE"
refused "truncated" "truncated"
chmod 0622 "$STATE"
refused "writable by others" "owned by uid 0 or writable by others"
[ "$(stat -c %a "$STATE")" = 600 ] || afs_fail "the rewritten state file is not 0600"

# --- 3. SIGKILL: the last checkpoint is used.
rm -f "$STATE"
afs_mount -o "$OPTS"
# The whole file: in kernel mode the kernel's own readahead past a range
# would read pages a replay of the range may or may not ask for again.
"$AC_IO" check "$M/b" 21 >/dev/null || afs_fail "read before SIGKILL"
checkpoint_after
kill -KILL "$AFS_PID"
rc=0
wait "$AFS_PID" 2>/dev/null || rc=$?
[ "$rc" -eq 137 ] || afs_fail "SIGKILL: daemon exit status $rc"
_afs_forget_daemon "$AFS_PID"
fusermount3 -u "$M" || afs_fail "SIGKILL: fusermount3 -u failed"
afs_drop_caches
afs_mount -o "$OPTS"
root=$(warm_done)
ac_assert "$root" "g('warm.files') == 1 and g('warm.bytes') >= $((4 << 20)) and g('warm.refused') == 0" \
	"the killed daemon's checkpoint was not warmed up"
reads0=$(ac_get "$root" backing.reads)
"$AC_IO" check "$M/b" 21 >/dev/null || afs_fail "[after SIGKILL] wrong bytes in b"
ac_assert "$(ac_stats "$M")" "g('backing.reads') == $reads0" \
	"reads of the checkpoint's ranges reached the backing"
afs_umount

# --- 4. the throttle: a bounded rate, a pause while reads miss.
rm -f "$STATE"
afs_mount -o "$OPTS"
"$AC_IO" check "$M/a" 11 >/dev/null || afs_fail "read before the throttle"
afs_umount
afs_drop_caches
t0=$(date +%s.%N)
afs_mount -o "$OPTS,warm_rate=1M"
ac_assert "$(ac_stats "$M")" "g('warm.pending') == 1" "the warm-up ended at once"
"$AC_IO" check "$M/c" 32 >/dev/null || afs_fail "cold read during the warm-up"
root=$(warm_done)
t1=$(date +%s.%N)
secs=$(python3 -c "print('%.1f' % ($t1 - $t0))")
ac_assert "$root" "g('warm.pauses') >= 1" "the warm-up did not yield to a cold reader"
ac_assert "$root" "g('warm.bytes') >= $((8 << 20))"
python3 -c "import sys; sys.exit(0 if $t1 - $t0 >= 6 else 1)" ||
	afs_fail "8 MiB warmed up in $secs s with warm_rate=1M"
echo "throttled warm-up: $(ac_get "$root" warm.bytes) bytes in $secs s at warm_rate=1M," \
	"$(ac_get "$root" warm.pauses) pauses for a cold reader"
afs_umount
echo "PASS: $AFS_TEST_NAME [$AC_MODE]"
