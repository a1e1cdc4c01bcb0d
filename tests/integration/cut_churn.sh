#!/usr/bin/env bash
# cut_churn.sh - a file cut short and extended again, over and over, on the
# backing (a log rotated in place, a spool file rewritten) while readers read
# it through the mount (docs/reliability.md, "A file cut while it is read").
# Every word ever written to it is non-zero, so a zero word read was never
# the file's (afs_cut_churn counts them):
#   read_mode=direct: a held descriptor (1 MiB preads to the end of file,
#     again and again), an open per pass (64 KiB reads) and a held O_DIRECT
#     descriptor read no zero word;
#   read_mode=kernel, with and without opens=none: the same readers and one
#     through mmap run, and their zeros are reported, not judged.  They are
#     the kernel's: after a READ reply shorter than it asked, the kernel
#     zero-fills the rest of the pages it asked for and keeps them when its
#     attributes moved meanwhile, through any FUSE server (libfuse's
#     passthrough_ll too); an O_DIRECT read that comes back short goes on
#     through the page cache.  aheadfs's own kernel-mode replies are judged
#     by unit/data_cut (no zero word), where no kernel stands between.
# On a 4 KiB-block ext4 volume: ext4 with 1 KiB blocks on Linux 6.18 returns
# zeros under this churn through its own reads, O_DIRECT included, with no
# FUSE in the way (seen while writing this test).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
afs_require_root
AFS_MKFS_OPTS="-b 4096 ${AFS_MKFS_OPTS:-}" afs_loop_ext4 256
SECS=${AFS_CHURN_S:-4}
f=$AFS_SRC/spool
head -c 1M /dev/zero | tr '\0' '\1' >"$f"

# churn LABEL MOUNT-OPTIONS JUDGED-READERS -- OTHER-READERS: run, print, and
# fail if a judged reader saw a zero word.
churn()
{
	local label=$1 opts=$2 judged=$3 others=$4 out
	afs_mount -o "$opts"
	# shellcheck disable=SC2086
	out=$("$AFS_TESTBIN/afs_cut_churn" "$f" "$AFS_MNT/spool" "$SECS" \
		$judged $others)
	afs_umount
	echo "$out" | sed "s/^/$label: /"
	for r in $judged $others; do
		[ "$(echo "$out" | awk -v r="$r" '$1 == r && $2 == "passes" { print $3 }')" -gt 0 ] ||
			afs_fail "$label: reader $r made no pass"
	done
	for r in $judged; do
		local z
		z=$(echo "$out" | awk -v r="$r" '$1 == r && $2 == "passes" { print $5 }')
		[ "$z" -eq 0 ] || afs_fail "$label: reader $r read $z zero words"
	done
	echo "$out" | grep -q '^writer cuts [1-9]' || afs_fail "$label: the writer cut nothing"
}

churn direct read_mode=direct "held reopen odirect" ""
churn kernel read_mode=kernel "" "held reopen mmap odirect"
churn kernel-opens-none read_mode=kernel,opens=none "" "held reopen mmap odirect"
echo "cut_churn: ok"
