#!/usr/bin/env bash
# plot.sh - draw run.sh's results (RESULTS.tsv) as a bar chart: throughput of
# every target as a ratio to reading the backing directly, per workload.
#
# Usage: tests/bench/plot.sh RESULTS.tsv OUT.png [TITLE]
# Needs gnuplot (installed from Debian's gnuplot-nox if missing, as root).
set -euo pipefail
tsv=$1 png=$2 title=${3:-"Cold-cache reads, throughput relative to the backing"}
if ! command -v gnuplot >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q gnuplot-nox >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One row per workload, one column per target: value / backing's value.
awk -F'\t' '
	{ v[$1, $2] = $3; if (!($1 in seen)) { seen[$1] = 1; w[++nw] = $1 }
	  if (!($2 in tseen)) { tseen[$2] = 1; t[++nt] = $2 } }
	END {
		printf "workload"
		for (j = 1; j <= nt; j++) if (t[j] != "backing") printf "\t%s", t[j]
		printf "\n"
		for (i = 1; i <= nw; i++) {
			b = v[w[i], "backing"]
			printf "\"%s\"", w[i]
			for (j = 1; j <= nt; j++) if (t[j] != "backing")
				printf "\t%.3f", (b > 0 ? v[w[i], t[j]] / b : 0)
			printf "\n"
		}
	}' "$tsv" >"$work/data"
ncols=$(head -1 "$work/data" | awk -F'\t' '{print NF}')
# Wide enough for every workload's group of bars, room for the long labels.
nrows=$(($(wc -l <"$work/data") - 1))
width=$((nrows * 55 + 300))
[ "$width" -lt 1200 ] && width=1200

gnuplot <<GP
set terminal pngcairo size $width,760 font "sans,10" noenhanced
set output "$png"
set title "$title"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set ylabel "throughput / backing's"
set grid ytics
set key top left
set xtics rotate by -30 left
set bmargin 14
set rmargin 30
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
set datafile separator "\t"
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1.5 lc rgb "#444444"
plot for [c=2:$ncols] "$work/data" using c:xtic(1) title columnheader(c)
GP
echo "wrote $png"
