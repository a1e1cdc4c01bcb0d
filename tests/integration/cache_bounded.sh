#!/usr/bin/env bash
# cache_bounded.sh - a 160 MiB file streamed through a 64 MiB cache
# (-o cache_size=64M): every byte right, the cache evicts instead of
# growing (used <= budget, evictions), and in a release build the daemon's
# peak RSS (VmHWM) stays within the budget + 64 MiB.  Under ASan the RSS
# bound is skipped (shadow memory and quarantine), the rest is not.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root

budget=$((64 << 20))
size=$((160 << 20))
ac_mount_ext4 256 cache_size=64M
"$AC_IO" fill "$AFS_SRC/big" "$size" 51
ac_hold "$AFS_MNT/big"
hwm0=$(ac_vmhwm)
"$AC_IO" check "$AFS_MNT/big" 51 1M >/dev/null ||
	afs_fail "[$AC_MODE] the 160 MiB file read back wrong"
# A second pass after the first evicted the head: still right.
"$AC_IO" check "$AFS_MNT/big" 51 1M 0 $((16 << 20)) >/dev/null ||
	afs_fail "[$AC_MODE] the file's head read back wrong after eviction"
hwm=$(ac_vmhwm)
js=$(ac_stats "$AFS_MNT/big")
ac_show big "$js"
root=$(ac_stats "$AFS_MNT")
ac_assert "$root" "g('options.cache_size') == $budget and $budget * 9 // 10 <= g('cache.budget_bytes') <= $budget" \
	"cache_size=64M not in force"
ac_assert "$root" "g('cache.used_bytes') <= g('cache.budget_bytes') and g('cache.high_bytes') <= g('cache.budget_bytes')" \
	"the cache is above its budget"
ac_assert "$root" "g('cache.cached_pages') * 4096 <= $budget" \
	"more pages cached than the budget holds"
if [ "$AC_MODE" = direct ]; then
	# Every byte went through aheadfs's cache: it must have evicted.
	ac_assert "$root" "g('cache.evictions') > 0" "no eviction"
fi
ac_assert "$js" "g('backing.bytes') >= $size" "the file was not read"
ac_assert "$js" "g('cache.errors') == 0 and g('readahead.errors') == 0"
echo "bounded [$AC_MODE]: VmHWM ${hwm0} KiB at mount, ${hwm} KiB after" \
	"(bound $(((budget >> 10) + 65536)) KiB)"
if [[ ${AFS_SANITIZE:-} == *address* ]]; then
	echo "bounded: ASan build, RSS bound not asserted"
else
	[ "$hwm" -le $(((budget >> 10) + 65536)) ] ||
		afs_fail "[$AC_MODE] daemon VmHWM $hwm KiB above budget + 64 MiB"
fi
ac_umount
