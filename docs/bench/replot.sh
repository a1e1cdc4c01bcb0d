#!/usr/bin/env bash
# replot.sh - the derived files of a stored benchmark run, made again from its
# CSV: what tests/bench/run.sh writes beside RESULTS.md at the end of a run.
#
# Usage: docs/bench/replot.sh RESULTS.md [OUTDIR]
#   RESULTS.md  a run's output; its runs are read from RESULTS.md.csv (or,
#               for the oldest runs, RESULTS.csv)
#   OUTDIR      where to write (default: a new directory under /tmp, printed)
# Writes RESULTS.md.PROFILE.tsv (workload, target, MB/s: the median run of
# each cell as run.sh picks it, 0 where a run failed), RESULTS.md.tsv (the
# fast profile's) and, where gnuplot is at hand, RESULTS.md.PROFILE.png
# (tests/bench/plot.sh).  A run kept only as a .tsv (the 2026-11-30 ones)
# is drawn with tests/bench/plot.sh directly.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] && [ $# -le 2 ] || { sed -n '5,8s/^# \{0,1\}//p' "$0" >&2; exit 2; }
md=$1
csv=$md.csv
[ -f "$csv" ] || csv=${md%.md}.csv
[ -f "$csv" ] || { echo "replot.sh: no $md.csv or ${md%.md}.csv" >&2; exit 1; }
out=${2:-$(mktemp -d /tmp/replot.XXXXXX)}
mkdir -p "$out"
base=$out/$(basename "$md")

# The CSV's quoted fields hold commas (workload names) but no quotes.  Cells
# are written per profile, row and run, targets rotated; the first run of the
# first row lists the targets in their -t order, which run.sh's tables keep.
awk -v base="$base" '
	function fields(s, f,   n, i) {
		n = 0
		while (s != "") {
			if (substr(s, 1, 1) == "\"") {
				i = index(substr(s, 2), "\"")
				f[++n] = substr(s, 2, i - 1)
				s = substr(s, i + 3)
			} else if ((i = index(s, ",")) > 0) {
				f[++n] = substr(s, 1, i - 1)
				s = substr(s, i + 1)
			} else {
				f[++n] = s
				s = ""
			}
		}
		return n
	}
	NR == 1 { next }
	{
		fields($0, f)
		p = f[1]; w = f[2]; t = f[3]
		if (!(p in pseen)) { pseen[p] = 1; prof[++np] = p }
		if (!((p, w) in wseen)) { wseen[p, w] = 1; work[p, ++nw[p]] = w }
		if (!(t in tseen)) { tseen[t] = 1; tgt[++nt] = t }
		k = p SUBSEP w SUBSEP t
		cell[k] = 1
		if (f[5] != "ok") bad[k] = 1
		else val[k, ++n[k]] = f[6]
	}
	END {
		for (i = 1; i <= np; i++) {
			p = prof[i]
			file = base "." p ".tsv"
			for (j = 1; j <= nw[p]; j++) {
				w = work[p, j]
				for (l = 1; l <= nt; l++) {
					k = p SUBSEP w SUBSEP tgt[l]
					if (!(k in cell)) continue
					v = 0
					if (!(k in bad) && n[k] > 0) {
						# run.sh: sort -g by MB/s, the (n+1)/2-th run.
						m = n[k]
						for (a = 1; a <= m; a++) s[a] = val[k, a]
						for (a = 2; a <= m; a++)
							for (b = a; b > 1 && s[b - 1] + 0 > s[b] + 0; b--) {
								x = s[b]; s[b] = s[b - 1]; s[b - 1] = x
							}
						v = s[int((m + 1) / 2)]
					}
					printf "%s\t%s\t%s\n", w, tgt[l], v > file
				}
			}
			close(file)
			print p
		}
	}' "$csv" | while read -r profile; do
	[ "$profile" = fast ] && cp "$base.$profile.tsv" "$base.tsv"
	if command -v gnuplot >/dev/null; then
		"$top/tests/bench/plot.sh" "$base.$profile.tsv" "$base.$profile.png" \
			"Throughput relative to the backing, device profile $profile (no bar: the cell failed, see the table)" >&2
	fi
done
echo "$out"
