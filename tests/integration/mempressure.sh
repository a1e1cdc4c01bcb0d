#!/usr/bin/env bash
# mempressure.sh - the cache gives memory back when its cgroup needs it.
# The daemon and a reader in a memory cgroup (v1) of 256 MiB, read_mode=
# direct, with an explicit cache_size=160M that fills (a 200 MiB file read
# through the mount).  Then a second process in the cgroup grows to 140 MiB
# (4 MiB every 50 ms: 80 MiB/s, about 8 MiB per tick of the pressure
# thread, so a tick delayed by a loaded machine -- sanitizers, ctest -j --
# still finds room; at 4 MiB every 20 ms the test failed once in a
# clean-clone ASan run) and holds it: the daemon's budget and 160 MiB
# would not fit beside it.  Asserted:
#   - no OOM kill in the cgroup (memory.oom_control: oom_kill 0), the
#     grower got all of its memory, the daemon still serves;
#   - the mount's stats show it: memory.pressure_shrinks >= 1, the budget
#     (cache.budget_bytes) below 160 MiB, memory.trimmed_bytes > 0, the
#     cgroup limit read;
#   - once the grower is gone the budget grows back (pressure_grows >= 1);
#   - every byte read through the mount, before and after, is correct.
# Skipped without a writable cgroup v1 memory controller.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root

ac_memcg_home # CG_HOME, or the test is skipped
if [ -n "${AFS_SANITIZE:-}" ]; then
	export ASAN_OPTIONS=${ASAN_OPTIONS:-}:quarantine_size_mb=4:malloc_context_size=5
fi

afs_loop_ext4 512
"$AC_IO" fill "$AFS_SRC/big" 200M 11 || afs_fail "fill"
sync

cg=$CG_HOME/afs-mempressure.$$
mkdir "$cg"
trap 'rmdir "$cg" 2>/dev/null || true' EXIT
echo 256M >"$cg/memory.limit_in_bytes"
rc=0
(
	echo "$BASHPID" >"$cg/cgroup.procs"
	afs_mount -o read_mode=direct,cache_size=160M
	"$AC_IO" check "$AFS_MNT/big" 11 1M || afs_fail "first read"
	s=$(ac_stats "$AFS_MNT")
	budget0=$(ac_get "$s" cache.budget_bytes)
	used0=$(ac_get "$s" cache.used_bytes)
	limit=$(ac_get "$s" memory.cgroup_limit)
	echo "before: budget $((budget0 >> 20)) MiB, used $((used0 >> 20)) MiB," \
		"cgroup limit $((limit >> 20)) MiB"
	[ "$limit" -eq $((256 << 20)) ] || afs_fail "cgroup limit read as $limit"
	[ "$used0" -gt $((120 << 20)) ] || afs_fail "the cache did not fill ($used0)"

	python3 - <<'PY' || afs_fail "the grower did not get its memory"
import time
held = []
for i in range(35):
    held.append(bytearray(4 << 20))
    time.sleep(0.05)
time.sleep(2)
assert sum(len(b) for b in held) == 140 << 20
PY
	s=$(ac_stats "$AFS_MNT")
	budget1=$(ac_get "$s" cache.budget_bytes)
	shrinks=$(ac_get "$s" memory.pressure_shrinks)
	trimmed=$(ac_get "$s" memory.trimmed_bytes)
	echo "under pressure: budget $((budget1 >> 20)) MiB, $shrinks shrinks," \
		"$((trimmed >> 20)) MiB handed back"
	[ "$shrinks" -ge 1 ] || afs_fail "no shrink under pressure"
	[ "$budget1" -lt "$budget0" ] || afs_fail "budget $budget1 not below $budget0"
	[ "$trimmed" -gt 0 ] || afs_fail "no memory handed back"

	for _ in $(seq 100); do # the calm period, then a tick
		grows=$(ac_get "$(ac_stats "$AFS_MNT")" memory.pressure_grows)
		[ "$grows" -ge 1 ] && break
		sleep 0.1
	done
	budget2=$(ac_get "$(ac_stats "$AFS_MNT")" cache.budget_bytes)
	echo "after: budget $((budget2 >> 20)) MiB, $grows grows"
	[ "$grows" -ge 1 ] || afs_fail "the budget did not grow back"
	"$AC_IO" check "$AFS_MNT/big" 11 1M || afs_fail "read after pressure"
	afs_umount
) || rc=$?
oom=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.oom_control")
peak=$(cat "$cg/memory.max_usage_in_bytes")
echo "peak usage $((peak >> 20)) MiB, oom_kill $oom"
[ "$oom" = 0 ] || afs_fail "the OOM killer ran ($oom)"
[ "$rc" -eq 0 ] || afs_fail "the run failed ($rc)"
echo "mempressure: ok"
