#!/usr/bin/env bash
# prog_sqlite.sh - sqlite3 with a WAL database on the mount (its -shm file is
# a shared mapping): inserts in several transactions, a second connection
# reading while the writer's WAL is live, PRAGMA integrity_check ok, the
# count right after reopening, and the same database read on the backing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
afs_require_fuse
command -v sqlite3 >/dev/null || afs_fail "sqlite3 is needed"
afs_mount
DB=$AFS_MNT/test.db

mode=$(sqlite3 "$DB" 'PRAGMA journal_mode=WAL;')
[ "$mode" = wal ] || afs_fail "journal_mode is '$mode', not wal"
sqlite3 "$DB" 'CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT NOT NULL, b BLOB);
	CREATE INDEX t_v ON t(v);'
for txn in 1 2 3 4 5; do
	sqlite3 "$DB" "BEGIN;
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
		INSERT INTO t(v, b) SELECT 'txn$txn-' || i, randomblob(200) FROM n;
		COMMIT;"
done

# One connection keeps the WAL open (and uncheckpointed) while another
# reads and writes.
coproc W { sqlite3 "$DB"; }
echo "PRAGMA wal_autocheckpoint=0; BEGIN; INSERT INTO t(v) VALUES('held'); COMMIT; SELECT 'ready';" >&"${W[1]}"
read -r line <&"${W[0]}" # wal_autocheckpoint's own "0"
read -r line <&"${W[0]}"
[ "$line" = ready ] || afs_fail "writer connection: '$line'"
[ -s "$AFS_SRC/test.db-wal" ] || afs_fail "no WAL file on the backing while a connection is open"
[ -e "$AFS_SRC/test.db-shm" ] || afs_fail "no -shm file on the backing"
n=$(sqlite3 "$DB" 'SELECT count(*) FROM t;')
[ "$n" -eq 5001 ] || afs_fail "second connection counts $n rows, expected 5001"
sqlite3 "$DB" "INSERT INTO t(v) VALUES('other');"
echo "SELECT count(*) FROM t;" >&"${W[1]}"
read -r line <&"${W[0]}"
[ "$line" -eq 5002 ] || afs_fail "first connection sees $line rows, expected 5002"
echo ".quit" >&"${W[1]}"
wait "$W_PID" || afs_fail "writer connection failed"

ok=$(sqlite3 "$DB" 'PRAGMA integrity_check;')
[ "$ok" = ok ] || afs_fail "integrity_check: $ok"
n=$(sqlite3 "$DB" "SELECT count(*) FROM t WHERE v LIKE 'txn%';")
[ "$n" -eq 5000 ] || afs_fail "reopened: $n rows, expected 5000"
n=$(sqlite3 "$DB" "SELECT count(DISTINCT substr(v, 1, 4)) FROM t WHERE v LIKE 'txn%';")
[ "$n" -eq 5 ] || afs_fail "rows of $n transactions, expected 5"
afs_umount
# The database as the backing holds it.
ok=$(sqlite3 "$AFS_SRC/test.db" 'PRAGMA integrity_check;')
[ "$ok" = ok ] || afs_fail "integrity_check on the backing: $ok"
n=$(sqlite3 "$AFS_SRC/test.db" 'SELECT count(*) FROM t;')
[ "$n" -eq 5002 ] || afs_fail "backing database has $n rows, expected 5002"
