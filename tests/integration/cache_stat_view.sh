#!/usr/bin/env bash
# cache_stat_view.sh - aheadfs-stat's live view and Prometheus output on a
# real mount while a reader runs:
#   - --watch N under a terminal (tmux, 80 columns, a short pane): one line
#     per path per interval, every line within 80 columns, the header again
#     every screenful of the pane's height (TIOCGWINSZ), every field a
#     number or "-", the reader's traffic visible in the rates;
#   - --watch N into a pipe: the header every 24 lines;
#   - --watch N --full: the whole table again;
#   - --prometheus: parsed by a strict parser of the text format (every
#     sample with its HELP and TYPE, valid names, numeric values, counters
#     ending in _total), numbers equal to the JSON's; --prometheus=FILE
#     writes FILE through FILE.tmp and rename(); a file that is not the
#     mount's root is refused.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cache_lib.sh"
afs_require_fuse
afs_require_root
: "${AHEADFS_STAT:?AHEADFS_STAT must name aheadfs-stat (ctest sets it)}"
if ! command -v tmux >/dev/null; then
	apt-get install -y -qq tmux >/dev/null 2>&1 ||
		afs_fail "tmux missing and apt-get install tmux failed"
fi

M=$AFS_MNT
size=$((48 << 20))
"$AC_IO" fill "$AFS_SRC/f" "$size" 7
# direct: every read reaches aheadfs, so the rates keep moving
afs_mount -o read_mode=direct,cache_size=40M
ac_hold "$M/f"
# Stopped by a flag file, not a signal: a killed loop would leave its
# running reader holding the file, and the unmount would find it busy.
(while [ ! -e "$AFS_WORK/stop-reader" ]; do
	"$AC_IO" check "$M/f" 7 >/dev/null || exit 1
done) &
reader=$!
cleanup_reader() { touch "$AFS_WORK/stop-reader"; wait "$reader" 2>/dev/null || true; }

# check_view FILE ROWS NAMES: the lines of a --watch run (python3).
check_view()
{
	python3 - "$1" "$2" "$3" <<'EOF' || afs_fail "--watch output malformed ($1)"
import re, sys
lines = [l.rstrip("\n") for l in open(sys.argv[1])]
rows, names = int(sys.argv[2]), sys.argv[3] == "1"
while lines and not lines[-1].strip():
    lines.pop()
lines = [l for l in lines if l != "DONE"]
assert lines, "no output"
head = lines[0]
assert "hit/s" in head and "bkMB/s" in head, "no header first: %r" % head
num = re.compile(r"^(-|\d+(\.\d+)?[kMGTP]?)$")
moved = False
for i, l in enumerate(lines):
    assert len(l) <= 80, "line %d longer than 80 columns: %r" % (i, l)
    if i % rows == 0:
        assert l == head, "line %d is not the header: %r" % (i, l)
        continue
    assert l != head, "a header at line %d" % i
    f = l.split()
    if names:
        f = f[1:]
    assert len(f) == len(head.split()) - names, "line %d: %r" % (i, l)
    for x in f:
        assert num.match(x), "line %d: %r is not a number" % (i, x)
    if f[0] != "0" or f[2] not in ("0", "0.0"):
        moved = True
assert moved, "the reader's traffic never showed"
headers = sum(1 for l in lines if l == head)
assert headers >= 3, "%d headers in %d lines" % (headers, len(lines))
print("%s: %d lines, %d headers, every %d" % (sys.argv[1], len(lines), headers, rows))
EOF
}

# Under a terminal of 80x12: the header every 12 lines.
sock=afs-view-$$
out=$AFS_WORK/view.tty
tmux -L "$sock" new-session -d -x 80 -y 12 \
	"$AHEADFS_STAT --watch 0.1 --count 20 $M $M/f; echo DONE; sleep 600"
for _ in $(seq 1 300); do
	tmux -L "$sock" capture-pane -p -S - -E - >"$out" 2>/dev/null || true
	grep -qx DONE "$out" && break
	sleep 0.1
done
tmux -L "$sock" kill-server 2>/dev/null || true
grep -qx DONE "$out" || afs_fail "--watch under tmux did not finish: $(tail -n 5 "$out")"
check_view "$out" 12 1

# Into a pipe (not a terminal): 24 lines a screen.
"$AHEADFS_STAT" --watch 0.05 --count 50 "$M" | cat >"$AFS_WORK/view.pipe" ||
	afs_fail "aheadfs-stat --watch into a pipe failed"
check_view "$AFS_WORK/view.pipe" 24 0

# The full table stays.
full=$("$AHEADFS_STAT" --watch 0.1 --full --count 2 "$M/f") ||
	afs_fail "aheadfs-stat --watch --full failed"
grep -q "cache.hits" <<<"$full" || afs_fail "--full lacks the table: $full"
cleanup_reader

# Prometheus, checked by a strict parser of the text format.
check_prom()
{
	python3 - "$1" "$2" <<'EOF' || afs_fail "--prometheus output malformed"
import json, re, sys
text, js = open(sys.argv[1]).read(), json.loads(open(sys.argv[2]).read())
name_re = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
label_re = re.compile(r'^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\.)*)"$')
helps, types, samples = {}, {}, []
assert text.endswith("\n"), "no final newline"
for n, line in enumerate(text.split("\n")[:-1], 1):
    if line.startswith("# HELP "):
        name, _, h = line[7:].partition(" ")
        assert name_re.match(name) and h and name not in helps, line
        helps[name] = h
    elif line.startswith("# TYPE "):
        name, _, t = line[7:].partition(" ")
        assert name in helps and name not in types, "TYPE without HELP: " + line
        assert t in ("counter", "gauge"), line
        assert (t == "counter") == name.endswith("_total"), "counter name: " + line
        types[name] = t
    else:
        m = re.match(r"^([^{ ]+)(\{([^}]*)\})? (\S+)$", line)
        assert m, "line %d: %r" % (n, line)
        name, labels, value = m.group(1), m.group(3), m.group(4)
        assert name_re.match(name), line
        assert name in types, "sample before its TYPE: " + line
        float(value)
        ls = dict(label_re.match(l).groups() for l in labels.split(",")) if labels else {}
        assert "mount" in ls, line
        samples.append((name, ls, float(value)))
assert len(samples) >= 50, "%d samples" % len(samples)
got = {(s[0], s[1].get("kind")): s[2] for s in samples}
# the figures are the JSON's (a later JSON: counters can only have grown)
assert got[("aheadfs_backing_bytes_total", None)] <= js["backing"]["bytes"]
assert got[("aheadfs_cache_budget_bytes", None)] == js["cache"]["budget_bytes"]
assert got[("aheadfs_options_cache_size", None)] == js["options"]["cache_size"]
assert got[("aheadfs_readahead_decisions_total", "initial")] <= js["readahead"]["decisions"]["initial"]
assert got[("aheadfs_readahead_decisions_total", "initial")] >= 1
print("prometheus: %d samples, %d metrics" % (len(samples), len(types)))
EOF
}
"$AHEADFS_STAT" --prometheus "$M" >"$AFS_WORK/prom.out" ||
	afs_fail "aheadfs-stat --prometheus failed"
ac_stats "$M" >"$AFS_WORK/root.json"
check_prom "$AFS_WORK/prom.out" "$AFS_WORK/root.json"

mkdir -p "$AFS_WORK/textfile"
prom=$AFS_WORK/textfile/aheadfs.prom
"$AHEADFS_STAT" --prometheus="$prom" "$M" || afs_fail "--prometheus=FILE failed"
[ -s "$prom" ] && [ ! -e "$prom.tmp" ] || afs_fail "--prometheus=FILE: no $prom, or $prom.tmp left"
ac_stats "$M" >"$AFS_WORK/root.json"
check_prom "$prom" "$AFS_WORK/root.json"
if "$AHEADFS_STAT" --prometheus "$M/f" >/dev/null 2>"$AFS_WORK/err"; then
	afs_fail "--prometheus on a file (not the mount) accepted"
fi
grep -q "mount's root" "$AFS_WORK/err" || afs_fail "--prometheus on a file: $(cat "$AFS_WORK/err")"

ac_umount
echo "ok: aheadfs-stat's live view and Prometheus output"
