#!/usr/bin/env bash
# cache_nginx.sh - nginx (root = the mount, on 127.0.0.1, a config in the
# test's work dir) serves 12 MiB files with sendfile on and with sendfile
# off: curl's copies match the backing's checksum, and the file's stats show
# the reads went through aheadfs's cache.  Then each file is changed
# through the mount and fetched again: the new bytes (coherent).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || afs_fail "nginx missing (package nginx-light)"
command -v curl >/dev/null || afs_fail "curl missing"

size=$((12 << 20))
ac_mount_ext4 96
for s in on off; do
	"$AC_IO" fill "$AFS_SRC/sf-$s" "$size" 111
	ac_hold "$AFS_MNT/sf-$s"
done

W=$AFS_WORK/nginx
mkdir -p "$W/tmp"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$W/nginx.conf" <<CONF
daemon off;
master_process on;
user root;
worker_processes 1;
pid $W/nginx.pid;
error_log $W/error.log;
events { worker_connections 64; }
http {
	access_log off;
	default_type application/octet-stream;
	client_body_temp_path $W/tmp/body;
	proxy_temp_path $W/tmp/proxy;
	server {
		listen 127.0.0.1:$port;
		location /on/ { alias $AFS_MNT/; sendfile on; }
		location /off/ { alias $AFS_MNT/; sendfile off; }
	}
}
CONF
"$NGINX" -t -q -e "$W/error.log" -p "$W" -c "$W/nginx.conf" ||
	afs_fail "nginx -t: $(cat "$W/error.log")"
"$NGINX" -e "$W/error.log" -p "$W" -c "$W/nginx.conf" &
ngx=$!
# SIGTERM: a background job of a script starts with SIGQUIT ignored.
stop_nginx()
{
	kill -TERM "$ngx" 2>/dev/null || return 0
	wait "$ngx" 2>/dev/null || true
}
exit_with_nginx()
{
	local rc=$?
	set +e
	stop_nginx
	_afs_rc() { return "$rc"; }
	_afs_rc
	_afs_cleanup
}
trap exit_with_nginx EXIT
for ((i = 0; ; i++)); do
	curl -s -o /dev/null "http://127.0.0.1:$port/" && break
	kill -0 "$ngx" 2>/dev/null || afs_fail "nginx exited: $(cat "$W/error.log")"
	[ "$i" -lt $((AFS_WAIT_S * 10)) ] || afs_fail "nginx not answering"
	sleep 0.1
done

fetch()
{
	local s=$1 got want
	curl -sf -o "$W/got" "http://127.0.0.1:$port/$s/sf-$s" ||
		afs_fail "[$AC_MODE] curl sendfile $s failed"
	got=$(sha256sum <"$W/got")
	want=$(sha256sum <"$AFS_SRC/sf-$s")
	[ "$got" = "$want" ] ||
		afs_fail "[$AC_MODE] sendfile $s: served bytes differ from the file"
}
for s in on off; do
	fetch "$s"
	js=$(ac_stats "$AFS_MNT/sf-$s")
	ac_show "nginx sendfile $s" "$js"
	ac_assert "$js" "g('backing.bytes') >= $size and g('cache.hits') + g('cache.misses') > 0" \
		"sendfile $s: the file was not served through aheadfs's cache"
	ac_assert "$js" "g('readahead.windows') > 0" \
		"sendfile $s: no readahead for a whole-file fetch"
	# Change it through the mount (same size), fetch again.
	"$AC_IO" write "$AFS_MNT/sf-$s" 112 $((3 << 20)) $((100 << 10))
	"$AC_IO" check "$AFS_SRC/sf-$s" 112 64K $((3 << 20)) $((100 << 10)) \
		>/dev/null || afs_fail "the write did not reach the backing"
	fetch "$s"
done
stop_nginx
grep -E '\[(alert|crit|emerg)\]' "$W/error.log" &&
	afs_fail "nginx logged errors"
ac_umount
