#!/usr/bin/env bash
# server_nfs.sh - an NFS server on the mountpoint: nfs-ganesha with its VFS
# backend (this kernel has no nfsd) exports the aheadfs mount of a 256 MiB
# file on an ext4 loop volume, on 127.0.0.1 only, on a free port, with a
# private config, log, pid file and recovery dir in the work dir.  Four
# libnfs readers (nfs-cat, NFSv4) read the file at once, cold: every copy
# matches the backing's checksum, and the file's stats show what aheadfs is
# for -- of all readahead decisions async ones >= 75 % (of the pages read
# ahead >= 95 %), random ones <= 5 %, a window at the cap.  The test installs what it needs (nfs-ganesha,
# nfs-ganesha-vfs, rpcbind, libnfs-utils); ganesha is stopped on any exit.
# NFSv4 only: ganesha needs no rpcbind for it, so none is started.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
. "$(dirname "$0")/server_lib.sh"
afs_require_fuse
afs_require_root
srv_install nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils
GANESHA=$(command -v ganesha.nfsd || echo /usr/bin/ganesha.nfsd)
[ -x "$GANESHA" ] || afs_fail "ganesha.nfsd missing after installing nfs-ganesha"
command -v nfs-cat >/dev/null || afs_fail "nfs-cat missing (libnfs-utils)"

readers=4
size=$((256 << 20))
ac_mount_ext4 320
head -c "$size" /dev/urandom >"$AFS_SRC/big"
want=$(sha256sum <"$AFS_SRC/big" | cut -d' ' -f1)
afs_drop_caches
ac_hold "$AFS_MNT/big"

W=$AFS_WORK/ganesha
mkdir -p "$W/recovery" "$W/run"
port=$(srv_port)
cat >"$W/ganesha.conf" <<CONF
NFS_CORE_PARAM {
	NFS_Port = $port;
	Bind_Addr = 127.0.0.1;
	Protocols = 4;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Enable_UDP = false;
}
NFS_KRB5 { Active_krb5 = false; }
NFSv4 {
	Graceless = true;
	RecoveryBackend = fs;
	RecoveryRoot = "$W/recovery";
	Only_Numeric_Owners = true;
}
EXPORT {
	Export_Id = 1;
	Path = "$AFS_MNT";
	Pseudo = /share;
	Access_Type = RO;
	Squash = No_Root_Squash;
	Protocols = 4;
	Transports = TCP;
	SecType = sys;
	Clients = 127.0.0.1;
	FSAL { Name = VFS; }
}
LOG { Default_Log_Level = EVENT; }
CONF
# Fails the test with ganesha's log.
nfs_fail()
{
	tail -n 40 "$W/ganesha.log" >&2 2>/dev/null || true
	afs_fail "$@"
}
# The VFS backend finds the exported file system in /etc/mtab: without it
# the export is not made and clients get NFS4ERR_NOENT.
[ -e /etc/mtab ] || afs_fail "/etc/mtab is missing (a link to /proc/self/mounts" \
	"on a booted system): nfs-ganesha's VFS backend cannot find file systems"
srv_start ganesha "$GANESHA" -F -f "$W/ganesha.conf" -L "$W/ganesha.log" \
	-p "$W/run/ganesha.pid"
srv_wait_port "$port" ganesha
url="nfs://127.0.0.1/share/big?version=4&nfsport=$port"

start=$(date +%s.%N)
for ((i = 0; i < readers; i++)); do
	{ nfs-cat "$url" 2>"$W/cat.$i.err" | sha256sum | cut -d' ' -f1 \
		>"$W/sum.$i"; } &
	pids[i]=$!
done
for ((i = 0; i < readers; i++)); do
	wait "${pids[i]}" || nfs_fail "nfs-cat reader $i failed: $(cat "$W/cat.$i.err")"
done
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
for ((i = 0; i < readers; i++)); do
	got=$(cat "$W/sum.$i")
	[ "$got" = "$want" ] ||
		nfs_fail "reader $i: NFS copy differs (sha256 $got, backing $want)" \
			"$(cat "$W/cat.$i.err")"
done
echo "$readers NFSv4 readers x $((size >> 20)) MiB through ganesha: bytes match (${secs}s)"

js=$(ac_stats "$AFS_MNT/big")
srv_assert_readahead "$js" "nfs-ganesha, $readers libnfs readers"
srv_stop ganesha
ac_umount
