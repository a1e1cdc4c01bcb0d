#!/usr/bin/env bash
# cache_coop.sh - cooperative readers: 4 threads take a 48 MiB file's 11 KiB
# chunks in turn (chunk i goes to the next free thread), first through ONE
# shared handle (threads sharing an fd: the RAID0 regression of the seeds),
# then through a handle PER REQUEST (open, pread, close: an NFS/SMB server's
# thread pool).  Each thread alone looks random; together they stream.  The
# stats must show readahead that saw the stream (context or stream-table
# windows, or async windows) and large backing reads, and every byte must be
# right.  Each pattern reads its own never-read file.  Then another process
# reads the first file again through a hard link (made on the backing
# before anything was read: a link changes the inode's ctime, which is a
# change behind the mount): one mapping per backing inode, so the link
# shows the same stats, and in direct mode nothing is read from the
# backing again (in kernel mode the kernel's page cache serves it, or, if
# something dropped that cache, aheadfs reads it again: it keeps one copy).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root

size=$((48 << 20))
pages=$((size / 4096))
ac_mount_ext4 200
for handle in one per-request; do
	f=coop-$handle
	"$AC_IO" fill "$AFS_SRC/$f" "$size" 21
	ac_hold "$AFS_MNT/$f"
	[ "$handle" != one ] || ln "$AFS_SRC/$f" "$AFS_SRC/coop-link"
	drops=$(ac_drops)
	"$AC_IO" coop "$AFS_MNT/$f" 21 4 11K "$handle" >/dev/null ||
		afs_fail "[$AC_MODE] $handle: wrong bytes"
	js=$(ac_stats "$AFS_MNT/$f")
	ac_show "$f" "$js"
	ac_assert "$js" "g('readahead.context') + g('readahead.stream') > 0 or g('readahead.async') > 0" \
		"$handle: no context, stream or async readahead"
	ac_assert "$js" "g('readahead.windows') > 0 and g('readahead.sync_pages') + g('readahead.async_pages') >= $pages // 2" \
		"$handle: readahead windows did not cover the stream"
	ac_assert "$js" "g('backing.reads') > 0 and g('backing.bytes') // g('backing.reads') >= 131072" \
		"$handle: backing reads are small"
	if ac_undisturbed "$drops"; then
		ac_assert "$js" "$size <= g('backing.bytes') <= $size * 11 // 10" \
			"$handle: the file was not read from the backing about once"
		ac_assert "$js" "g('readahead.async_pages') * 10 >= $pages * 8" \
			"$handle: the stream was not read ahead asynchronously"
		# Misses: absent pages (see cache_seq.sh); measured 4-14 of
		# 12288 (direct), 68-143 (kernel).
		ac_assert "$js" "g('cache.misses') * 20 <= $pages" \
			"$handle: misses are not far below the pages read"
	fi
	ac_assert "$js" "g('readahead.errors') == 0 and g('cache.errors') == 0"
done
before=$(ac_get "$(ac_stats "$AFS_MNT/coop-one")" backing.bytes)
ac_assert "$(ac_stats "$AFS_MNT/coop-link")" "g('backing.bytes') == $before" \
	"a second name of the file has stats of its own"
"$AC_IO" check "$AFS_MNT/coop-link" 21 >/dev/null ||
	afs_fail "[$AC_MODE] read through the hard link: wrong bytes"
js=$(ac_stats "$AFS_MNT/coop-link")
ac_assert "$js" "g('file.ino') == $(stat -c %i "$AFS_MNT/coop-one")"
[ "$AC_MODE" = kernel ] ||
	ac_assert "$js" "g('backing.bytes') == $before" \
		"a second name of the file did not share its cached pages"
ac_umount
