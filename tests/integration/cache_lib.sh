# cache_lib.sh - shared by the cache_*.sh tests (aheadfs's own page cache and
# readahead, issue 5): sourced after lib.sh.
#
# Sets:
#   AC_MODE   the read mode under test: $AFS_READ_MODE (ctest registers the
#             key tests once per mode), default kernel
#   AC_IO     the afs_data_io helper (seeded pattern files, checked reads)
#
# Functions:
#   ac_mount_ext4 MIB [OPT,...]  a real ext4 volume (lib.sh's loop helper),
#                            then the daemon with -o read_mode=$AC_MODE[,OPT]
#   ac_stats PATH            the user.aheadfs.stats value of PATH (JSON), read
#                            size-first like getfattr
#   ac_xattr PATH NAME       any xattr value, the same way
#   ac_cachestat FILE        "cached dirty writeback": FILE's pages in the
#                            page cache (cachestat(2))
#   ac_require_cachestat     skip the test (77) without cachestat(2)
#   ac_assert JSON EXPR [MSG]  EXPR (Python) must be true; g("a.b") is the
#                            field a.b of JSON (list items by number); on
#                            failure prints EXPR with every g() value, the
#                            JSON and the daemon log, and fails the test
#                            (with AC_SOFT=1: counts the failure and goes
#                            on; ac_soft_end then fails the test)
#   ac_soft_end              fail if a soft assertion failed
#   ac_get JSON PATH         print one field
#   ac_show LABEL JSON       one summary line of a file's stats on stdout
#   ac_vmhwm                 the daemon's peak RSS in KiB (VmHWM)
#   ac_hold PATH...          keep PATH open (read-only, no reads) until
#                            ac_unhold: a file's cache state and stats live
#                            as long as the kernel keeps its inode, and a
#                            drop_caches or memory pressure (from any test
#                            on the machine) makes it forget closed ones
#   ac_unhold                close them all
#   ac_umount                ac_unhold, then afs_umount
#   ac_drops                 how many drop_caches the machine has seen
#                            (/proc/vmstat drop_pagecache): a check that
#                            needs the kernel's page cache to stay is
#                            inconclusive when this moved under it
#   ac_undisturbed DROPS     true in direct mode, or when ac_drops is still
#                            DROPS (else says so on stdout): guards kernel
#                            mode's cost assertions (a dropped kernel copy is
#                            read again through aheadfs, which keeps one)

AC_MODE=${AFS_READ_MODE:-kernel}
AC_IO=$AFS_TESTBIN/afs_data_io
[ -x "$AC_IO" ] || afs_fail "$AC_IO missing (build the tests)"
command -v python3 >/dev/null || afs_fail "python3 missing"
case "$AC_MODE" in
kernel | direct) ;;
*) afs_fail "AFS_READ_MODE must be kernel or direct, not '$AC_MODE'" ;;
esac

ac_mount_ext4()
{
	local mib=$1 extra=${2:-}
	afs_loop_ext4 "$mib"
	afs_mount -o "read_mode=$AC_MODE${extra:+,$extra}"
}

ac_xattr()
{
	"$AC_IO" xattr "$1" "$2" || afs_fail "getxattr $2 on $1 failed"
}

# nr_cache nr_dirty nr_writeback of FILE, in pages: what the page cache
# holds of it (cachestat(2), syscall 451 on x86-64 and arm64 alike).
ac_cachestat()
{
	python3 - "$1" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
rng = (ctypes.c_uint64 * 2)(0, 0)
out = (ctypes.c_uint64 * 5)()
fd = os.open(sys.argv[1], os.O_RDONLY)
if libc.syscall(451, fd, rng, out, 0):
    sys.exit(1)
print(out[0], out[1], out[2])
PY
}

# Skip the test (exit 77) where the kernel has no cachestat(2) (before 6.5).
ac_require_cachestat()
{
	ac_cachestat /proc/self/exe >/dev/null 2>&1 ||
		{ echo "SKIP: $AFS_TEST_NAME: no cachestat(2) in this kernel" >&2; exit 77; }
}

ac_stats()
{
	ac_xattr "$1" user.aheadfs.stats
}

_ac_py='
import json, sys
j = json.loads(sys.argv[1])
seen = {}
def g(path):
    v = j
    for k in path.split("."):
        v = v[int(k)] if isinstance(v, list) else v[k]
    seen[path] = v
    return v
'

ac_assert()
{
	local json=$1 expr=$2 msg=${3:-}
	if ! python3 -c "$_ac_py"'
try:
    ok = eval(sys.argv[2])
except Exception as e:
    print("ac_assert: %s: %r" % (sys.argv[2], e), file=sys.stderr)
    ok = False
if not ok:
    print("assertion failed: %s  (%s)" % (sys.argv[2], ", ".join(
        "%s=%s" % kv for kv in seen.items())), file=sys.stderr)
    print(json.dumps(j, indent=1), file=sys.stderr)
    sys.exit(1)
' "$json" "$expr"; then
		if [ -n "${AC_SOFT:-}" ]; then
			echo "FAIL (going on): $AFS_TEST_NAME: [$AC_MODE]" \
				"${msg:-stats assertion}: $expr" >&2
			_ac_soft_failed=$((_ac_soft_failed + 1))
			return 0
		fi
		_afs_show_log "$AFS_LOG"
		afs_fail "[$AC_MODE] ${msg:-stats assertion}: $expr"
	fi
}

_ac_soft_failed=0
ac_soft_end()
{
	[ "$_ac_soft_failed" -eq 0 ] ||
		afs_fail "[$AC_MODE] $_ac_soft_failed stats assertion(s) failed"
}

ac_get()
{
	python3 -c "$_ac_py"'
print(g(sys.argv[2]))' "$1" "$2" || afs_fail "no field $2 in: $1"
}

ac_show()
{
	python3 -c "$_ac_py"'
ra, c, b = j["readahead"], j["cache"], j["backing"]
avg = b["bytes"] // b["reads"] if b["reads"] else 0
print("%s [%s]: pages %d misses %d hits %d cached %d | backing reads %d "
      "bytes %d avg %dK amp %s | ra sync %d async %d context %d random %d "
      "stream %d windows %d | uncached %d" % (sys.argv[2], sys.argv[3],
      j["file"]["pages"], c["misses"], c["hits"], c["cached_pages"],
      b["reads"], b["bytes"], avg // 1024, b["amplification"], ra["sync"],
      ra["async"], ra["context"], ra["random"], ra["stream"],
      ra["windows"], j["uncached_reads"]))' "$2" "$1" "$AC_MODE" ||
		afs_fail "stats of $1 not in the documented form: $2"
}

# CG_HOME: this shell's cgroup v1 memory directory, where test cgroups are
# made; exits 77 (skip) without a writable v1 memory controller.
ac_memcg_home()
{
	local own
	own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup)
	CG_HOME=/sys/fs/cgroup/memory${own%/}
	if [ -z "$own" ] || [ ! -w "$CG_HOME/cgroup.procs" ] ||
		[ ! -e "$CG_HOME/memory.oom_control" ]; then
		echo "SKIP: $AFS_TEST_NAME: no writable cgroup v1 memory controller" >&2
		exit 77
	fi
}

ac_vmhwm()
{
	awk '/^VmHWM:/ { print $2 }' "/proc/$AFS_PID/status"
}

_ac_held=()
ac_hold()
{
	local p fd
	for p; do
		exec {fd}<"$p" || afs_fail "cannot open $p"
		_ac_held+=("$fd")
	done
}

ac_unhold()
{
	local fd
	for fd in "${_ac_held[@]}"; do
		exec {fd}<&-
	done
	_ac_held=()
}

ac_umount()
{
	ac_unhold
	afs_umount
}

ac_drops()
{
	awk '$1 == "drop_pagecache" { print $2; f = 1 } END { if (!f) print 0 }' \
		/proc/vmstat
}

ac_undisturbed()
{
	[ "$AC_MODE" = direct ] && return 0
	[ "$(ac_drops)" = "$1" ] && return 0
	echo "[$AC_MODE] the kernel's page cache was dropped during the" \
		"workload (drop_caches elsewhere): its cost is not asserted"
	return 1
}
