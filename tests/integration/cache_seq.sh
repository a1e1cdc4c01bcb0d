#!/usr/bin/env bash
# cache_seq.sh - one sequential reader of a 64 MiB file on ext4 (loop device,
# direct I/O): aheadfs's readahead runs ahead of it.  The stats must show
# async readahead (windows queued ahead of the reader, not only sync misses),
# large backing reads (>= 128 KiB on average), misses far below the pages
# read, each page read from the backing once, and every byte right.
# A readahead that silently stopped working fails here.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root

size=$((64 << 20))
pages=$((size / 4096))
ac_mount_ext4 160
"$AC_IO" fill "$AFS_SRC/seq" "$size" 11
ac_hold "$AFS_MNT/seq"
drops=$(ac_drops)
"$AC_IO" check "$AFS_MNT/seq" 11 128K >/dev/null ||
	afs_fail "[$AC_MODE] sequential read returned wrong bytes"
js=$(ac_stats "$AFS_MNT/seq")
ac_show seq "$js"
ac_assert "$js" "g('file.size') == $size and g('file.pages') == $pages"
ac_assert "$js" "g('readahead.async') > 0 and g('readahead.async_pages') > 0" \
	"no async readahead ahead of a sequential reader"
ac_assert "$js" "g('readahead.decisions.async') + g('readahead.decisions.async_recover') + g('readahead.decisions.stream_async') == g('readahead.async')" \
	"async is not the sum of its decisions"
ac_assert "$js" "g('backing.reads') > 0 and g('backing.bytes') // g('backing.reads') >= 131072" \
	"backing reads are small"
if ac_undisturbed "$drops"; then
	ac_assert "$js" "g('readahead.sync_pages') * 16 <= $pages and g('readahead.async_pages') * 10 >= $pages * 9" \
		"the pages were not read ahead asynchronously"
	# A miss is a page absent when the reader asks (a page under a
	# window's I/O is not one): without readahead every page is a miss.
	# Measured: 32 of 16384 (direct), 128 (kernel: it asks for up to
	# 1 MiB at once).
	ac_assert "$js" "g('cache.misses') * 20 <= $pages" \
		"misses are not far below the pages read"
	# Everything came from the backing, once.
	ac_assert "$js" "$size <= g('backing.bytes') <= $size * 11 // 10" \
		"the file was not read exactly once from the backing"
fi
ac_assert "$js" "g('cache.errors') == 0 and g('readahead.errors') == 0"
ac_assert "$js" "g('uncached_reads') == 0" "reads bypassed the cache"
root=$(ac_stats "$AFS_MNT")
ac_assert "$root" "g('options.read_mode') == '$AC_MODE'"
ac_assert "$root" "g('readahead.async') >= $(ac_get "$js" readahead.async)" \
	"the root's sum is below one file's count"
ac_assert "$root" "g('backing.bytes') >= $(ac_get "$js" backing.bytes)"
ac_umount
