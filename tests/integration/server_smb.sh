#!/usr/bin/env bash
# server_smb.sh - an SMB server on the mountpoint: smbd (Samba) shares the
# aheadfs mount of a 256 MiB file on an ext4 loop volume, on 127.0.0.1 only,
# on a free port, with a private smb.conf and its own state, lock, pid,
# cache and log dirs in the work dir, guest access.  Four smbclient readers
# fetch the file at once, cold: every copy matches the backing's checksum,
# and the file's stats show what aheadfs is for -- of all readahead
# decisions async ones >= 75 % (of the pages read ahead >= 95 %), random ones
# <= 5 %, a window at the cap.  The test installs samba and smbclient when
# missing; smbd is stopped on any exit.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
. "$(dirname "$0")/server_lib.sh"
afs_require_fuse
afs_require_root
srv_install samba smbclient
SMBD=$(command -v smbd || echo /usr/sbin/smbd)
[ -x "$SMBD" ] || afs_fail "smbd missing after installing samba"
command -v smbclient >/dev/null || afs_fail "smbclient missing"

readers=4
size=$((384 << 20))
# allow_other: smbd reads as the guest account.
ac_mount_ext4 448 allow_other
head -c "$size" /dev/urandom >"$AFS_SRC/big"
chmod 0644 "$AFS_SRC/big"
want=$(sha256sum <"$AFS_SRC/big" | cut -d' ' -f1)
afs_drop_caches
ac_hold "$AFS_MNT/big"

W=$AFS_WORK/smbd
for d in state lock run cache private ncalrpc log; do
	mkdir -p "$W/$d"
done
port=$(srv_port)
cat >"$W/smb.conf" <<CONF
[global]
	server role = standalone server
	workgroup = AFSTEST
	smb ports = $port
	interfaces = 127.0.0.1
	bind interfaces only = yes
	disable netbios = yes
	state directory = $W/state
	lock directory = $W/lock
	pid directory = $W/run
	cache directory = $W/cache
	private dir = $W/private
	ncalrpc dir = $W/ncalrpc
	log file = $W/log/smbd.log
	log level = 1
	map to guest = Bad User
	load printers = no
	printing = bsd
	printcap name = /dev/null
	disable spoolss = yes
[share]
	path = $AFS_MNT
	read only = yes
	guest ok = yes
	guest only = yes
CONF
testparm -s "$W/smb.conf" >/dev/null 2>"$W/testparm.err" ||
	afs_fail "testparm: $(cat "$W/testparm.err")"
srv_start smbd "$SMBD" --foreground --no-process-group --debug-stdout \
	--configfile="$W/smb.conf"
srv_wait_port "$port" smbd

start=$(date +%s.%N)
for ((i = 0; i < readers; i++)); do
	mkfifo "$W/fifo.$i"
	{ sha256sum <"$W/fifo.$i" | cut -d' ' -f1 >"$W/sum.$i"; } &
	sums[i]=$!
	smbclient -s "$W/smb.conf" -N -p "$port" //127.0.0.1/share \
		-c "get big $W/fifo.$i" >"$W/client.$i.out" 2>&1 &
	pids[i]=$!
done
for ((i = 0; i < readers; i++)); do
	wait "${pids[i]}" || {
		# The fifos' readers may wait for a writer that never came: one
		# opens and closes each (read-write: that never blocks).
		for ((j = 0; j < readers; j++)); do
			exec {fd}<>"$W/fifo.$j" && exec {fd}>&-
		done
		afs_fail "smbclient reader $i failed: $(cat "$W/client.$i.out")"
	}
	wait "${sums[i]}"
done
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
for ((i = 0; i < readers; i++)); do
	got=$(cat "$W/sum.$i")
	[ "$got" = "$want" ] ||
		afs_fail "reader $i: SMB copy differs (sha256 $got, backing $want)" \
			"$(cat "$W/client.$i.out")"
done
echo "$readers smbclient readers x $((size >> 20)) MiB through smbd: bytes match (${secs}s)"

js=$(ac_stats "$AFS_MNT/big")
python3 -c 'import json, sys; print("decisions:", {k: v for k, v in json.loads(sys.argv[1])["readahead"]["decisions"].items() if v})' "$js"
srv_assert_readahead "$js" "smbd, $readers smbclient readers"
srv_stop smbd
ac_umount
