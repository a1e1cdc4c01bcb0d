#!/usr/bin/env bash
# bad_input.sh - bad command lines get one clear line on stderr, a non-zero
# exit and nothing mounted: SOURCE missing / not a directory, MOUNTPOINT
# missing / busy / inside SOURCE, unknown option, malformed option values,
# no /dev/fuse.  --help and --version exit 0.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_require_root

bad=0
mounts_under_work()
{
	awk -v w="$AFS_WORK/" 'index($5, w) == 1' /proc/self/mountinfo | wc -l
}

# expect_refused DESC ARG...: run the daemon (in the background mode, as a
# user would) and check the refusal.
expect_refused()
{
	local desc=$1 rc=0 before lines
	shift
	before=$(mounts_under_work)
	timeout 60 "$AHEADFS" "$@" >"$AFS_WORK/out" 2>"$AFS_WORK/err" || rc=$?
	lines=$(wc -l <"$AFS_WORK/err")
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$rc" -gt 128 ]; then
		echo "FAIL: $desc: exit status $rc, expected a plain failure" >&2
		bad=1
	fi
	if [ "$lines" -ne 1 ] || ! [ -s "$AFS_WORK/err" ]; then
		echo "FAIL: $desc: $lines lines on stderr, expected one:" >&2
		cat "$AFS_WORK/err" >&2
		bad=1
	fi
	if [ "$(mounts_under_work)" -ne "$before" ]; then
		echo "FAIL: $desc: something was mounted" >&2
		bad=1
		for m in $(awk -v w="$AFS_WORK/" 'index($5, w) == 1 { print $5 }' \
			/proc/self/mountinfo | tac); do
			[ "$m" = "$AFS_MNT" ] && [ -n "$AFS_PID" ] || umount -l "$m"
		done
	fi
	echo "$desc: exit $rc: $(head -n1 "$AFS_WORK/err")"
}

echo file >"$AFS_WORK/file"
mkdir "$AFS_SRC/inner"
expect_refused "SOURCE missing" "$AFS_WORK/nope" "$AFS_MNT"
expect_refused "SOURCE is a file" "$AFS_WORK/file" "$AFS_MNT"
expect_refused "MOUNTPOINT missing" "$AFS_SRC" "$AFS_WORK/nope"
expect_refused "MOUNTPOINT is a file" "$AFS_SRC" "$AFS_WORK/file"
expect_refused "MOUNTPOINT inside SOURCE" "$AFS_SRC" "$AFS_SRC/inner"
expect_refused "MOUNTPOINT is SOURCE" "$AFS_SRC" "$AFS_SRC"
expect_refused "unknown option" -o no_such_option "$AFS_SRC" "$AFS_MNT"
expect_refused "unknown flag" --no-such-flag "$AFS_SRC" "$AFS_MNT"
expect_refused "malformed max_threads" -o max_threads=abc "$AFS_SRC" "$AFS_MNT"
expect_refused "empty max_threads" -o max_threads= "$AFS_SRC" "$AFS_MNT"
expect_refused "negative attr_timeout" -o attr_timeout=-1 "$AFS_SRC" "$AFS_MNT"
expect_refused "malformed attr_timeout" -o attr_timeout=1x "$AFS_SRC" "$AFS_MNT"
expect_refused "-o without a value" "$AFS_SRC" "$AFS_MNT" -o
expect_refused "three operands" "$AFS_SRC" "$AFS_MNT" "$AFS_WORK/x"

# Missing operands: refused with non-zero exit (usage text allowed).
for args in "" "$AFS_SRC"; do
	rc=0
	# shellcheck disable=SC2086
	timeout 60 "$AHEADFS" $args >/dev/null 2>"$AFS_WORK/err" || rc=$?
	if [ "$rc" -eq 0 ] || [ "$rc" -gt 128 ] || ! [ -s "$AFS_WORK/err" ]; then
		echo "FAIL: missing operands ($args): exit $rc, stderr: $(cat "$AFS_WORK/err")" >&2
		bad=1
	fi
done

# MOUNTPOINT busy: already an aheadfs mount.
echo here >"$AFS_SRC/marker"
afs_mount
expect_refused "MOUNTPOINT busy" "$AFS_SRC" "$AFS_MNT"
[ "$(awk -v m="$AFS_MNT" '$5 == m' /proc/self/mountinfo | wc -l)" -eq 1 ] ||
	afs_fail "a second mount was stacked on the busy MOUNTPOINT"
[ "$(cat "$AFS_MNT/marker")" = here ] || afs_fail "the first mount broke"
afs_umount

# No /dev/fuse, in a private mount namespace: (1) /dev is a fresh tmpfs
# holding only /dev/null; (2) /dev/null is bind-mounted over /dev/fuse (a
# character device that is not FUSE's).
nofuse_setups=(
	'mount -t tmpfs afs-nodev /dev && mknod -m 666 /dev/null c 1 3'
	'mount --bind /dev/null /dev/fuse'
)
for setup in "${nofuse_setups[@]}"; do
	rc=0
	unshare -m --propagation private bash -c '
		'"$setup"' || exit 99
		rc=0
		timeout 60 "$1" "$2" "$3" 2>"$4" || rc=$?
		if awk -v m="$3" '"'"'$5 == m { f = 1 } END { exit !f }'"'"' /proc/self/mountinfo; then
			umount -l "$3"
			exit 98
		fi
		exit "$rc"' - "$AHEADFS" "$AFS_SRC" "$AFS_MNT" "$AFS_WORK/err" || rc=$?
	case "$rc" in
	0) echo "FAIL: no /dev/fuse ($setup): exit status 0" >&2 && bad=1 ;;
	98) echo "FAIL: no /dev/fuse ($setup): something was mounted" >&2 && bad=1 ;;
	99) afs_fail "could not hide /dev/fuse ($setup)" ;;
	124 | 1[3-9][0-9]) echo "FAIL: no /dev/fuse ($setup): hung or crashed ($rc)" >&2 && bad=1 ;;
	esac
	if [ "$(wc -l <"$AFS_WORK/err")" -ne 1 ]; then
		echo "FAIL: no /dev/fuse ($setup): expected one line on stderr, got:" >&2
		cat "$AFS_WORK/err" >&2
		bad=1
	fi
	echo "no /dev/fuse ($setup): exit $rc: $(head -n1 "$AFS_WORK/err")"
done

# --help and --version (and -h, -V): exit 0, something on stdout.
for opt in --help -h --version -V; do
	rc=0
	out=$("$AHEADFS" "$opt" 2>&1) || rc=$?
	if [ "$rc" -ne 0 ] || [ -z "$out" ]; then
		echo "FAIL: $opt: exit $rc, output '$out'" >&2
		bad=1
	fi
done
"$AHEADFS" --help | grep -i usage >/dev/null || { echo "FAIL: --help has no usage line" >&2; bad=1; } # not grep -q: its early exit would make the writer die of SIGPIPE under pipefail
"$AHEADFS" --version | grep -q '[0-9]\.[0-9]' ||
	{ echo "FAIL: --version shows no version number" >&2; bad=1; }

[ "$(mounts_under_work)" -eq 0 ] || afs_fail "mounts left under $AFS_WORK"
[ "$bad" -eq 0 ] || afs_fail "bad input not handled (lines above)"
