#!/usr/bin/env bash
# syscalls_ext4.sh - syscalls.sh with SOURCE on a real ext4 volume on a loop
# device (afs_loop_ext4, losetup --direct-io=on): ext4's own errno choices,
# holes and extents are what the mount must reproduce.
set -euo pipefail
AFS_SYSCALLS_EXT4=1 exec bash "$(dirname "$0")/syscalls.sh"
