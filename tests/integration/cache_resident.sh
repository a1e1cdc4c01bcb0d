#!/usr/bin/env bash
# cache_resident.sh - what the backing's page cache already holds is taken
# from there, not from the disk (a cachestat(2) probe: fs/data/read.c
# before a miss, ra/backing_pages.c before each O_DIRECT read).  On an ext4 volume
# over a direct-I/O loop device (so every read that misses the page cache
# reaches the device), in both read modes:
#   1. a file just written into the backing, its pages held in the page
#      cache (afs_pin: a proactive reclaimer would otherwise take some of
#      them within seconds on some VMs): read through a fresh mount, the device reads nothing (under
#      1 MiB of 32) and the bytes are the file's.  Kernel mode serves the
#      reads straight from the backing's page cache (resident_reads, no page
#      inserted into aheadfs's cache, the file's pages all history after),
#      most of them spliced into the reply (resident_spliced: the kernel's
#      readahead asks for 128 KiB and more; the file has not changed for
#      2 s, RA_SPLICE_QUIET_S).  Direct mode, read in 128 KiB reads, the
#      same (each read goes on from the last: a stream's), none read into
#      its cache; then one 8 KiB read out of sequence goes through its
#      cache (read from the backing's page cache, backing.cached_reads)
#      and stays there (inserted);
#   2. the same file after drop_caches and a remount: the device reads at
#      least the file and cached_reads stays 0 -- the probe did not mistake
#      a cold file for a resident one.
#   3. an odd-sized resident file in kernel mode: spliced to its last byte.
# Skipped where the kernel has no cachestat(2) (before 6.5).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root
ac_require_cachestat
afs_loop_ext4 256
dev=$(basename "$AFS_LOOPDEV")

sectors_read()
{
	awk '{ print $3 }' "/sys/block/$dev/stat"
}

for mode in kernel direct; do
	f=$AFS_SRC/f.$mode
	head -c 32M /dev/urandom >"$AFS_WORK/data"
	cp "$AFS_WORK/data" "$f" # buffered: in the page cache now
	sync # written back, still cached
	# Quiet: a file changed in the last 2 s is copied, not spliced.  Read
	# again after the wait: what the page cache holds of a file 2 s after
	# it was written is not all of it on every VM.
	sleep 2
	cat "$f" >/dev/null
	afs_pin "$f"
	afs_mount -o read_mode=$mode
	s0=$(sectors_read)
	# 128 KiB read(2)s: in direct mode each reaches the daemon as it is
	# (cmp's 4 KiB reads would be copied, too short to splice).
	dd if="$AFS_MNT/f.$mode" bs=128K status=none | cmp - "$AFS_WORK/data" ||
		afs_fail "$mode: wrong bytes (hot)"
	s1=$(sectors_read)
	s=$(ac_stats "$AFS_MNT/f.$mode")
	cr=$(ac_get "$s" backing.cached_reads)
	cb=$(ac_get "$s" backing.cached_bytes)
	rr=$(ac_get "$s" resident_reads)
	rs=$(ac_get "$s" resident_spliced)
	ins=$(ac_get "$s" cache.inserted)
	hist=$(ac_get "$s" cache.history_pages)
	echo "$mode hot: device read $(((s1 - s0) / 2)) KiB, cached_reads $cr," \
		"cached_bytes $((cb >> 20)) MiB, resident_reads $rr (spliced $rs)," \
		"inserted $ins," \
		"history $hist, windows skipped $(ac_get "$s" readahead.resident_skipped)"
	[ $(((s1 - s0) / 2)) -lt 1024 ] ||
		afs_fail "$mode: the device read $(((s1 - s0) / 2)) KiB of a resident file"
	[ "$rr" -gt 0 ] || afs_fail "$mode: no read served from the page cache"
	# Kernel mode: its readahead asks for 128 KiB and more; direct mode:
	# the reader's 128 KiB.  Spliced.
	[ "$rs" -gt 0 ] && [ "$rs" -ge $((rr / 2)) ] ||
		afs_fail "$mode: $rs of $rr resident reads spliced"
	# None cached again, as a rule.  One probe that counts a resident
	# range short (cachestat(2) now and then does, more often on a busy
	# machine) sends one miss through readahead: its window is read, and
	# the next one, held whole by the page cache, is not
	# (readahead.resident_skipped).  So at most two windows, never the
	# rest of the file (a CI run cached 4160 pages of 8192 before).
	maxw=$(ac_get "$s" readahead.max_window_pages)
	[ "$ins" -le $((2 * maxw)) ] ||
		afs_fail "$mode: $ins pages of a resident file cached again"
	# Every page given is history (kernel mode); direct mode keeps what
	# it cached as data.
	kept=0
	[ "$mode" = kernel ] || kept=$ins
	[ $((hist + kept)) = 8192 ] ||
		afs_fail "$mode: history $hist (and $kept kept), not the file's 8192 pages"
	if [ "$mode" = direct ]; then
		# Out of sequence: through the cache, from the page cache.
		dd if="$AFS_MNT/f.$mode" bs=8K skip=1000 count=1 status=none |
			cmp - <(dd if="$AFS_WORK/data" bs=8K skip=1000 count=1 status=none) ||
			afs_fail "direct: wrong bytes (out of sequence)"
		s=$(ac_stats "$AFS_MNT/f.$mode")
		cr=$(ac_get "$s" backing.cached_reads)
		ins=$(ac_get "$s" cache.inserted)
		rr2=$(ac_get "$s" resident_reads)
		echo "direct out of sequence: cached_reads $cr, inserted $ins," \
			"resident_reads $rr2"
		[ "$rr2" = "$rr" ] || afs_fail "direct: a read out of sequence served around the cache"
		[ "$cr" -gt 0 ] || afs_fail "direct: the read out of sequence not read from the page cache"
		[ "$ins" -ge 2 ] || afs_fail "direct: the read out of sequence not cached ($ins pages)"
	fi
	afs_umount
	afs_unpin

	afs_drop_caches
	afs_mount -o read_mode=$mode
	s0=$(sectors_read)
	cmp "$AFS_MNT/f.$mode" "$AFS_WORK/data" || afs_fail "$mode: wrong bytes (cold)"
	s1=$(sectors_read)
	s=$(ac_stats "$AFS_MNT/f.$mode")
	cr=$(ac_get "$s" backing.cached_reads)
	rr=$(ac_get "$s" resident_reads)
	echo "$mode cold: device read $(((s1 - s0) / 2)) KiB, cached_reads $cr," \
		"resident_reads $rr"
	[ $(((s1 - s0) / 2)) -ge $((32 << 10)) ] ||
		afs_fail "$mode: the device read only $(((s1 - s0) / 2)) KiB of a cold file"
	[ "$cr" = 0 ] || afs_fail "$mode: $cr reads of a cold file counted as cached"
	[ "$rr" = 0 ] || afs_fail "$mode: $rr reads of a cold file served as resident"
	afs_umount
done
# 3. A resident file whose size ends inside a page (kernel mode): the last
#    reply, clipped at the EOF, is spliced as well, and every byte is right.
head -c $((5 * 1048576 + 1000)) /dev/urandom >"$AFS_WORK/odd"
cp "$AFS_WORK/odd" "$AFS_SRC/odd"
sync
sleep 2 # quiet, as above
cat "$AFS_SRC/odd" >/dev/null
afs_pin "$AFS_SRC/odd"
afs_mount
cmp "$AFS_MNT/odd" "$AFS_WORK/odd" || afs_fail "odd-sized resident file: wrong bytes"
s=$(ac_stats "$AFS_MNT/odd")
rr=$(ac_get "$s" resident_reads)
rs=$(ac_get "$s" resident_spliced)
echo "odd-sized: resident_reads $rr (spliced $rs)"
[ "$rs" -gt 0 ] || afs_fail "odd-sized: no resident read spliced"
afs_umount
afs_unpin
echo "cache_resident: ok"
