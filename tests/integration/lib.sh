# lib.sh - harness for aheadfs integration tests: sourced by every test script.
#
# Sourcing it sets up, for the calling script:
#   AFS_WORK   a private work directory (mode 0755, so a test user can reach
#              it), removed by the EXIT trap together with everything mounted
#              under it and every loop device attached by afs_loop_ext4
#   AFS_SRC    $AFS_WORK/src, the SOURCE that afs_mount mounts (created)
#   AFS_MNT    $AFS_WORK/mnt, the MOUNTPOINT (created)
#   AFS_PID    the daemon of the latest afs_mount
#   AFS_LOG    its log (stdout and stderr; it runs in the foreground)
#   AFS_TESTBIN, AHEADFS   from the environment (ctest sets them)
#
# Functions (each fails the test with a message on stderr, see afs_fail):
#   afs_require_fuse         exit 77 (skipped) without /dev/fuse or fusermount3
#   afs_require_root         exit 77 unless root (loop devices, users, mounts)
#   afs_mount [ARG...]       start "$AHEADFS" -f ARG... $AFS_SRC $AFS_MNT in the
#                            background and wait until it is mounted; fails
#                            with the daemon's log if it exits first.  With
#                            -o passthrough=writes first (AFS_PASSTHROUGH,
#                            empty: the default), see afs_mount()
#   afs_umount               fusermount3 -u $AFS_MNT, then wait for the daemon:
#                            its exit status must be 0 (it carries ASan/LSan)
#   afs_wait_daemon [RC]     wait for $AFS_PID to exit (after a signal) and
#                            check its exit status is RC (default 0) and that
#                            $AFS_MNT is no longer mounted
#   afs_must_fail CMD...     CMD fails (not by a signal) and the daemon is
#                            still alive and mounted
#   afs_loop_ext4 [MIB]      a real ext4 volume: a sparse image file (default
#                            256 MiB), attached with losetup --direct-io=on,
#                            mkfs.ext4 -q, mounted at $AFS_WORK/ext4 (with
#                            acl,user_xattr); sets AFS_LOOPDEV, AFS_EXT4 and
#                            moves AFS_SRC to $AFS_EXT4/src so that a following
#                            afs_mount serves that directory.  Cleanup unmounts
#                            it and detaches the loop device.
#   afs_mount_ext4 MIB [ARG...]  afs_loop_ext4 MIB, then afs_mount ARG...
#   afs_test_user            make sure the unprivileged test user exists
#                            (afs-test-user, primary group afs-test-user,
#                            supplementary groups afs-test-g1 and afs-test-g2);
#                            sets AFS_USER, AFS_UID, AFS_GID, AFS_G1, AFS_G2,
#                            and AFS_UBIN: a copy of the afs_* helpers that
#                            the user can run wherever the build dir lives
#   afs_as_user CMD...       run CMD as that user with its groups
#   afs_user_fuse_dev        let that user open /dev/fuse (without udev it is
#                            root's only: an ACL entry, taken back at exit),
#                            holding until the test ends the machine-wide
#                            lock of the tests that change /dev/fuse or
#                            /etc/fuse.conf (on fd 8)
#   afs_test_other           a second unprivileged user (afs-test-other,
#                            supplementary group afs-test-g2 only); sets
#                            AFS_OTHER, AFS_OTHER_UID, AFS_OTHER_GID
#   afs_as_other CMD...      run CMD as that second user
#   afs_at_exit CMD          run CMD (a string, eval'd) in the EXIT trap
#                            after the mounts are gone, also on failure;
#                            the last registered first
#   afs_drop_caches          sync, then drop the page cache and the dentries
#                            and inodes: the kernel FORGETs what it can
#   afs_daemon_fds           number of fds the daemon ($AFS_PID) holds
#   afs_wait_fds_back BASE WHAT  drop caches until the daemon holds at most
#                            BASE + 32 fds (it released every inode the
#                            kernel forgot); fails after AFS_WAIT_S seconds
#                            with WHAT in the message
#   afs_is_mounted PATH      PATH is a mount point (read from mountinfo,
#                            without touching the file system behind it)
#   afs_log_lines PATTERN    how many lines of $AFS_LOG match PATTERN
#   afs_wait_log PATTERN     wait until a line of $AFS_LOG matches PATTERN
#                            (something the daemon logs after the mount is
#                            up, from a thread of its own); fails after
#                            AFS_WAIT_S seconds
#   afs_pin FILE             lock FILE's pages in the page cache (afs_data_io
#                            pin: mmap + mlock, reading in any page already
#                            gone) until afs_unpin: a check that needs a
#                            backing file resident cannot count on memory
#                            being left alone (a proactive reclaimer, such
#                            as DAMON's pageout on some VMs, takes clean
#                            file pages idle for seconds, free memory or
#                            not); one file at a time
#   afs_unpin                let it go
#   afs_root_stat GROUP KEY  GROUP.KEY of the root's stats (the mount's
#                            user.aheadfs.stats on $AFS_MNT)
#   afs_fresh NAME           a new, empty AFS_SRC and AFS_MNT (src.NAME,
#                            mnt.NAME in the work dir) for the next afs_mount
#   afs_fail MSG...          print "FAIL: MSG" and exit 1
#
# AFS_MOUNT_OPTS: options every afs_mount adds after the test's own, split
# at blanks (e.g. "-o passthrough=off": a test's variant, registered with
# afs_script_test's ENV).
#
# AFS_URING=1: every afs_mount with -o transport=uring (see the end).
#
# AFS_DAEMON_AS_USER=1 makes afs_mount start the daemon as the test user
# (afs_test_user first; the test grants it /dev/fuse and the mount point),
# and stat the new mount as that user.
#
# Several mounts in one test: set AFS_SRC/AFS_MNT before afs_mount; each
# afs_mount's daemon is remembered and cleaned up.  Tests may run in parallel
# (ctest -j): every path is under the private $AFS_WORK.
#
# The daemon is started with SIGINT and SIGQUIT at their default action: a
# non-interactive shell starts background jobs with them ignored, and a
# daemon (libfuse) keeps an ignored signal ignored.
#
# Knobs (environment): TMPDIR (where work dirs and loop images live; must
# allow O_DIRECT for afs_loop_ext4), AFS_WAIT_S (liveness bound, default 60),
# AFS_KEEP_WORK=1 (keep the work dir for a post-mortem), AFS_MKFS_OPTS (extra
# mkfs.ext4 options), AFS_SEED (integrity/churn replay).
#
# A test on a real ext4 volume, e.g. for a benchmark or a cache test:
#   . "$(dirname "$0")/lib.sh"
#   afs_require_fuse
#   afs_mount_ext4 1024 -o allow_other  # 1 GiB volume, aheadfs over $AFS_SRC
#   head -c 512M /dev/urandom >"$AFS_SRC/big"; afs_drop_caches
#   ... read "$AFS_MNT/big" ...
#   afs_umount                           # the trap detaches the loop device
# By hand, from the build dir:
#   AHEADFS=fs/aheadfs AFS_TESTBIN=tests/integration \
#       bash ../tests/integration/locks.sh

set -euo pipefail

AFS_TEST_NAME=$(basename "$0" .sh)
: "${AHEADFS:?AHEADFS must name the aheadfs daemon (ctest sets it)}"
: "${AFS_TESTBIN:?AFS_TESTBIN must name the integration test build dir}"
# How long to wait for a mount to appear or a daemon to exit: a liveness
# bound, never a performance assertion.  Sanitizer builds start slowly.
AFS_WAIT_S=${AFS_WAIT_S:-60}

# Work dirs of tests that were killed (ctest's TIMEOUT kills the whole
# process tree with SIGKILL, which no trap sees) are reaped by the next test
# that starts: a dir whose owner (the pid in its "owner" file) is gone gets
# its mounts lazily unmounted, its loop devices detached and is removed.
_afs_reap_stale()
{
	local o d m pids
	for o in "${TMPDIR:-/tmp}"/afs-*.*/owner; do
		[ -f "$o" ] || continue
		d=${o%/owner}
		pids=$(cat "$o" 2>/dev/null) || continue
		[ -n "$pids" ] && ! kill -0 "$pids" 2>/dev/null || continue
		mkdir "$d/.reaping" 2>/dev/null || continue # one reaper per dir
		echo "reaping $d (its test $pids was killed)" >&2
		for m in $(awk -v w="$d/" 'index($5, w) == 1 { print $5 }' \
			/proc/self/mountinfo | tac); do
			umount -l "$m" 2>/dev/null
		done
		for m in $(losetup -n -O NAME,BACK-FILE 2>/dev/null |
			awk -v w="$d/" 'index($2, w) == 1 { print $1 }'); do
			losetup -d "$m" 2>/dev/null
		done
		awk -v w="$d/" 'index($5, w) == 1 { f = 1 } END { exit !f }' \
			/proc/self/mountinfo || rm -rf --one-file-system "$d"
	done
	return 0
}
_afs_reap_stale

AFS_WORK=$(mktemp -d "${TMPDIR:-/tmp}/afs-$AFS_TEST_NAME.XXXXXX")
chmod 0755 "$AFS_WORK"
echo $$ >"$AFS_WORK/owner"
AFS_SRC=$AFS_WORK/src
AFS_MNT=$AFS_WORK/mnt
AFS_PID=
AFS_LOG=
AFS_LOOPDEV=
AFS_EXT4=
mkdir -p "$AFS_SRC" "$AFS_MNT"

_afs_pids=()      # daemons started by afs_mount
_afs_fuse_mnts=() # their mount points, same order
_afs_loopdevs=()  # loop devices attached by afs_loop_ext4
_afs_nmount=0

afs_fail()
{
	echo "FAIL: $AFS_TEST_NAME: $*" >&2
	exit 1
}

afs_require_fuse()
{
	if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
		echo "SKIP: $AFS_TEST_NAME: no /dev/fuse or fusermount3" >&2
		exit 77
	fi
}

afs_require_root()
{
	if [ "$(id -u)" -ne 0 ]; then
		echo "SKIP: $AFS_TEST_NAME: needs root" >&2
		exit 77
	fi
}

# Mount points are read from mountinfo: stat() on a FUSE mount would ask the
# daemon (and hang or fail with ENOTCONN when it is gone).  Field 5 is the
# mount point with " ", "\t", "\n" and "\\" escaped as octal; the paths used
# here have none of them.
afs_is_mounted()
{
	awk -v m="$1" '$5 == m { found = 1 } END { exit !found }' \
		/proc/self/mountinfo
}

_afs_fstype()
{
	awk -v m="$1" '$5 == m { for (i = 6; i <= NF; i++) if ($i == "-") t = $(i + 1) }
		END { print t }' /proc/self/mountinfo
}

_afs_show_log()
{
	if [ -n "${1:-}" ] && [ -s "$1" ]; then
		echo "--- daemon log ($1):" >&2
		tail -n 60 "$1" >&2
		echo "---" >&2
	fi
}

afs_mount()
{
	local log waited=0 as=()
	_afs_nmount=$((_afs_nmount + 1))
	log=$AFS_WORK/daemon.$_afs_nmount.log
	# Not afs_as_user: the daemon keeps the environment (ASAN_OPTIONS).
	[ -z "${AFS_DAEMON_AS_USER:-}" ] || as=(setpriv --reuid="$AFS_UID" \
		--regid="$AFS_GID" --init-groups --)
	local daemon=$AHEADFS
	[ -z "${AFS_DAEMON_AS_USER:-}" ] || daemon=$AFS_UBIN/aheadfs
	local extra=() pt=()
	[ -z "${AFS_MOUNT_OPTS:-}" ] || read -r -a extra <<<"$AFS_MOUNT_OPTS"
	# passthrough=writes unless the test names its own (a later -o wins):
	# the files a test just wrote are resident in the backing's page
	# cache, and the default (resident) would send their readers around
	# aheadfs's data path, the path under test.  AFS_PASSTHROUGH= (empty):
	# the daemon's default.
	[ -z "${AFS_PASSTHROUGH-writes}" ] ||
		pt=(-o "passthrough=${AFS_PASSTHROUGH-writes}")
	env --default-signal=INT,QUIT "${as[@]}" "$daemon" -f "${pt[@]}" "$@" "${extra[@]}" \
		"$AFS_SRC" "$AFS_MNT" >"$log" 2>&1 &
	AFS_PID=$!
	AFS_LOG=$log
	_afs_pids+=("$AFS_PID")
	_afs_fuse_mnts+=("$AFS_MNT")
	# Poll mountinfo: a fuse mount at $AFS_MNT whose daemon is alive.
	while ! { afs_is_mounted "$AFS_MNT" &&
		[[ $(_afs_fstype "$AFS_MNT") == fuse* ]]; }; do
		if ! kill -0 "$AFS_PID" 2>/dev/null; then
			local rc=0
			wait "$AFS_PID" || rc=$?
			_afs_show_log "$log"
			afs_fail "daemon exited ($rc) before mounting $AFS_MNT"
		fi
		if [ "$waited" -ge $((AFS_WAIT_S * 10)) ]; then
			_afs_show_log "$log"
			afs_fail "$AFS_MNT not mounted after ${AFS_WAIT_S}s"
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	# The mount exists before the daemon serves requests; one stat waits
	# for the session loop.
	"${as[@]}" stat "$AFS_MNT" >/dev/null || {
		_afs_show_log "$log"
		afs_fail "stat $AFS_MNT failed right after mounting"
	}
}

_afs_forget_daemon()
{
	local i keep_p=() keep_m=()
	for i in "${!_afs_pids[@]}"; do
		if [ "${_afs_pids[$i]}" != "$1" ]; then
			keep_p+=("${_afs_pids[$i]}")
			keep_m+=("${_afs_fuse_mnts[$i]}")
		fi
	done
	_afs_pids=("${keep_p[@]}")
	_afs_fuse_mnts=("${keep_m[@]}")
}

# Sanitizer reports go to the log; with halt_on_error they also make the
# exit status non-zero, but a report is a failure either way.
_afs_check_log_clean()
{
	if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' \
		"$1" 2>/dev/null; then
		_afs_show_log "$1"
		afs_fail "sanitizer report in the daemon log"
	fi
}

afs_wait_daemon()
{
	local want=${1:-0} rc=0 waited=0
	while kill -0 "$AFS_PID" 2>/dev/null; do
		if [ "$waited" -ge $((AFS_WAIT_S * 10)) ]; then
			_afs_show_log "$AFS_LOG"
			afs_fail "daemon $AFS_PID still running after ${AFS_WAIT_S}s"
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	wait "$AFS_PID" || rc=$?
	_afs_forget_daemon "$AFS_PID"
	if [ "$rc" -ne "$want" ]; then
		_afs_show_log "$AFS_LOG"
		afs_fail "daemon exit status $rc, expected $want"
	fi
	_afs_check_log_clean "$AFS_LOG"
	if [ "${AFS_URING:-}" = 1 ] &&
		! grep -q 'requests come through io_uring' "$AFS_LOG"; then
		_afs_show_log "$AFS_LOG"
		afs_fail "AFS_URING=1, but the daemon did not serve through io_uring"
	fi
	if afs_is_mounted "$AFS_MNT"; then
		afs_fail "$AFS_MNT still mounted after the daemon exited"
	fi
}

# afs_log_lines PATTERN: how many lines of the latest daemon's log match
afs_log_lines()
{
	grep -c -- "$1" "$AFS_LOG" || true
}

afs_wait_log()
{
	local n=0
	until grep -q -- "$1" "$AFS_LOG"; do
		[ "$n" -lt $((AFS_WAIT_S * 20)) ] ||
			afs_fail "the log never said '$1' in ${AFS_WAIT_S} s: $(cat "$AFS_LOG")"
		sleep 0.05
		n=$((n + 1))
	done
}

afs_pin()
{
	local line
	[ -z "${_afs_pin_pid:-}" ] || afs_fail "afs_pin: $_afs_pin_file is pinned"
	coproc _AFS_PIN { exec "$AFS_TESTBIN/afs_data_io" pin "$1"; }
	_afs_pin_pid=$_AFS_PIN_PID _afs_pin_file=$1
	_afs_pin_in=${_AFS_PIN[1]}
	read -r line <&"${_AFS_PIN[0]}" || line=
	case "$line" in
	pinned\ *) ;;
	*) afs_fail "afs_pin: cannot lock $1 in memory" ;;
	esac
}

afs_unpin()
{
	[ -n "${_afs_pin_pid:-}" ] || return 0
	exec {_afs_pin_in}>&-
	wait "$_afs_pin_pid" || afs_fail "afs_unpin: the pin of $_afs_pin_file failed"
	_afs_pin_pid=
}

afs_root_stat()
{
	python3 -c 'import json, os, sys
print(json.loads(os.getxattr(sys.argv[1], "user.aheadfs.stats"))[sys.argv[2]][sys.argv[3]])' \
		"$AFS_MNT" "$1" "$2"
}

afs_fresh()
{
	AFS_SRC=$AFS_WORK/src.$1
	AFS_MNT=$AFS_WORK/mnt.$1
	mkdir -p "$AFS_SRC" "$AFS_MNT"
}

afs_umount()
{
	fusermount3 -u "$AFS_MNT" || {
		_afs_show_log "$AFS_LOG"
		afs_fail "fusermount3 -u $AFS_MNT failed"
	}
	afs_wait_daemon 0
}

afs_must_fail()
{
	local rc=0
	"$@" || rc=$?
	if [ "$rc" -eq 0 ]; then
		afs_fail "expected to fail but succeeded: $*"
	fi
	if [ "$rc" -gt 128 ]; then
		afs_fail "killed by signal $((rc - 128)) instead of failing: $*"
	fi
	if ! kill -0 "$AFS_PID" 2>/dev/null; then
		_afs_show_log "$AFS_LOG"
		afs_fail "daemon died during: $*"
	fi
	if ! afs_is_mounted "$AFS_MNT"; then
		afs_fail "$AFS_MNT no longer mounted after: $*"
	fi
}

afs_drop_caches()
{
	sync
	echo 3 >/proc/sys/vm/drop_caches
	echo 2 >/proc/sys/vm/drop_caches
}

afs_daemon_fds()
{
	local fds=("/proc/$AFS_PID/fd"/*)
	echo "${#fds[@]}"
}

afs_wait_fds_back()
{
	local base=$1 what=$2 n=0 fds
	while :; do
		afs_drop_caches
		fds=$(afs_daemon_fds)
		[ "$fds" -gt $((base + 32)) ] || break
		[ "$n" -lt "$AFS_WAIT_S" ] ||
			afs_fail "daemon holds $fds fds (began with $base) after $what"
		sleep 1
		n=$((n + 1))
	done
	echo "daemon fds: $base at the start, $fds after $what"
}

afs_loop_ext4()
{
	local mib=${1:-256} img=$AFS_WORK/ext4.img dio
	afs_require_root
	command -v mkfs.ext4 >/dev/null || afs_fail "mkfs.ext4 missing (e2fsprogs)"
	truncate -s "${mib}M" "$img"
	AFS_LOOPDEV=$(losetup --direct-io=on -f --show "$img") ||
		afs_fail "losetup --direct-io=on -f --show $img failed"
	_afs_loopdevs+=("$AFS_LOOPDEV")
	# losetup only warns when the backing file refuses O_DIRECT; the
	# tests built on this helper rely on no page cache under the loop.
	dio=$(losetup -n -O DIO "$AFS_LOOPDEV" | tr -d ' ')
	[ "$dio" = 1 ] || afs_fail "$AFS_LOOPDEV: direct I/O is off" \
		"(does the file system under $AFS_WORK support O_DIRECT?)"
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 \
		${AFS_MKFS_OPTS:-} "$AFS_LOOPDEV" ||
		afs_fail "mkfs.ext4 $AFS_LOOPDEV failed"
	AFS_EXT4=$AFS_WORK/ext4
	mkdir -p "$AFS_EXT4"
	mount -t ext4 -o acl,user_xattr "$AFS_LOOPDEV" "$AFS_EXT4" ||
		afs_fail "mount $AFS_LOOPDEV on $AFS_EXT4 failed"
	chmod 0755 "$AFS_EXT4"
	AFS_SRC=$AFS_EXT4/src
	mkdir -p "$AFS_SRC"
}

afs_mount_ext4()
{
	local mib=$1
	shift
	afs_loop_ext4 "$mib"
	afs_mount "$@"
}

AFS_USER=afs-test-user
afs_test_user()
{
	afs_require_root
	# Parallel tests may create the user at once: serialize.
	(
		flock 9
		local g
		for g in afs-test-g1 afs-test-g2; do
			getent group "$g" >/dev/null || groupadd "$g"
		done
		if ! id "$AFS_USER" >/dev/null 2>&1; then
			useradd --no-create-home --home-dir /nonexistent \
				--shell /usr/sbin/nologin --user-group \
				--groups afs-test-g1,afs-test-g2 "$AFS_USER"
		fi
	) 9>/run/lock/afs-test-user.lock || afs_fail "cannot create $AFS_USER"
	AFS_UID=$(id -u "$AFS_USER")
	AFS_GID=$(id -g "$AFS_USER")
	AFS_G1=$(getent group afs-test-g1 | cut -d: -f3)
	AFS_G2=$(getent group afs-test-g2 | cut -d: -f3)
	id -G "$AFS_USER" | tr ' ' '\n' | grep -qx "$AFS_G1" ||
		afs_fail "$AFS_USER is not in afs-test-g1"
	AFS_UBIN=$AFS_WORK/bin
	mkdir -p "$AFS_UBIN"
	cp "$AFS_TESTBIN"/afs_* "$AFS_UBIN/"
	# What the user runs must be reachable by the user: a clone under
	# /root (0700, as on a fresh machine) is not.
	cp "$AHEADFS" "$AFS_UBIN/aheadfs"
	[ -z "${AHEADFS_STAT:-}" ] || cp "$AHEADFS_STAT" "$AFS_UBIN/aheadfs-stat"
	cp "$(dirname "${BASH_SOURCE[0]}")"/*.py "$AFS_UBIN/" 2>/dev/null || true
	chmod -R a+rX "$AFS_UBIN"
}

afs_as_user()
{
	setpriv --reuid="$AFS_UID" --regid="$AFS_GID" --init-groups \
		--reset-env -- "$@"
}

afs_user_fuse_dev()
{
	exec 8>/run/lock/afs-nonroot.lock
	flock 8
	afs_as_user sh -c 'exec 3<>/dev/fuse' 2>/dev/null && return 0
	command -v setfacl >/dev/null || afs_fail "setfacl missing (package acl)"
	setfacl -m "u:$AFS_USER:rw" /dev/fuse
	afs_at_exit 'setfacl -x "u:$AFS_USER" /dev/fuse'
	afs_as_user sh -c 'exec 3<>/dev/fuse' ||
		afs_fail "$AFS_USER cannot open /dev/fuse"
}

AFS_OTHER=afs-test-other
afs_test_other()
{
	afs_test_user
	(
		flock 9
		id "$AFS_OTHER" >/dev/null 2>&1 ||
			useradd --no-create-home --home-dir /nonexistent \
				--shell /usr/sbin/nologin --user-group \
				--groups afs-test-g2 "$AFS_OTHER"
	) 9>/run/lock/afs-test-user.lock || afs_fail "cannot create $AFS_OTHER"
	AFS_OTHER_UID=$(id -u "$AFS_OTHER")
	AFS_OTHER_GID=$(id -g "$AFS_OTHER")
}

afs_as_other()
{
	setpriv --reuid="$AFS_OTHER_UID" --regid="$AFS_OTHER_GID" \
		--init-groups --reset-env -- "$@"
}

_afs_exit_cmds=()
afs_at_exit()
{
	_afs_exit_cmds=("$1" "${_afs_exit_cmds[@]}")
}

_afs_cleanup()
{
	local rc=$? i pid m deadline sig
	set +e
	trap - EXIT INT TERM
	# FUSE mounts first (lazy: a test may have left a process inside).
	for ((i = ${#_afs_pids[@]} - 1; i >= 0; i--)); do
		pid=${_afs_pids[$i]}
		m=${_afs_fuse_mnts[$i]}
		afs_is_mounted "$m" && { fusermount3 -u -z "$m" 2>/dev/null ||
			umount -l "$m"; }
		# A daemon whose lazily unmounted files are still open (a test
		# failed with a process inside) does not exit by itself: 5 s,
		# then SIGTERM, 5 s, then SIGKILL.
		for sig in TERM KILL; do
			deadline=50
			while kill -0 "$pid" 2>/dev/null && [ "$deadline" -gt 0 ]; do
				sleep 0.1
				deadline=$((deadline - 1))
			done
			kill -"$sig" "$pid" 2>/dev/null
		done
		wait "$pid" 2>/dev/null
	done
	# Everything else mounted under the work dir, innermost (latest) first.
	local mounts
	mounts=$(awk -v w="$AFS_WORK/" 'index($5, w) == 1 { print $5 }' \
		/proc/self/mountinfo | tac)
	for m in $mounts; do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	for m in "${_afs_loopdevs[@]}"; do
		losetup -d "$m"
	done
	for m in "${_afs_exit_cmds[@]}"; do
		eval "$m" || { [ "$rc" -ne 0 ] || rc=1; }
	done
	if awk -v w="$AFS_WORK/" 'index($5, w) == 1 { f = 1 } END { exit !f }' \
		/proc/self/mountinfo; then
		echo "$AFS_TEST_NAME: mounts left under $AFS_WORK, not removed" >&2
		[ "$rc" -ne 0 ] || rc=1
	elif [ -n "${AFS_KEEP_WORK:-}" ]; then
		echo "$AFS_TEST_NAME: work dir kept: $AFS_WORK" >&2
	else
		rm -rf --one-file-system "$AFS_WORK"
	fi
	exit "$rc"
}
trap _afs_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# AFS_URING=1: every afs_mount serves with -o transport=uring (FUSE over
# io_uring), the fuse module's enable_uring set to Y for the test and put
# back after it (tests that set it hold the enable_uring lock), and every
# daemon's log must say its requests came through io_uring.  Skipped where
# the kernel has none (before Linux 6.14).
if [ "${AFS_URING:-}" = 1 ]; then
	_afs_uring_param=/sys/module/fuse/parameters/enable_uring
	if [ ! -w "$_afs_uring_param" ]; then
		echo "SKIP: $AFS_TEST_NAME: no FUSE over io_uring in this kernel" >&2
		exit 77
	fi
	afs_at_exit "echo $(cat "$_afs_uring_param") > $_afs_uring_param"
	echo Y >"$_afs_uring_param"
	AFS_MOUNT_OPTS="${AFS_MOUNT_OPTS:-} -o transport=uring"
fi
