/* main.c - aheadfs-stat's command line: the options, the usage text and the
 * view they pick (astat.h says what the tool shows and where each view
 * lives).
 */
#include "astat.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

volatile sig_atomic_t astat_stop;

static void on_signal(int sig)
{
	(void)sig;
	astat_stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: aheadfs-stat [--watch N [--full] [--count K]] [--map] "
		"[--json] PATH...\n"
		"       aheadfs-stat --prometheus[=FILE] MOUNT\n"
		"Show aheadfs cache and readahead statistics for files on an "
		"aheadfs mount\n"
		"(the mount's root directory gives the whole mount).\n\n"
		"  -w, --watch N        one line of rates every N seconds "
		"(fractions allowed)\n"
		"  -f, --full           with --watch: the whole table, with "
		"rates\n"
		"  -c, --count K        with --watch: stop after K lines\n"
		"  -m, --map            draw each file's cached pages as a "
		"bar\n"
		"  -j, --json           print the raw JSON values\n"
		"  -p, --prometheus[=FILE]  the mount's counters in the "
		"Prometheus text format,\n"
		"                       to FILE (written to FILE.tmp, then "
		"renamed) or stdout\n"
		"      --schema         print the field reference of "
		"docs/stats.md\n"
		"  -h, --help           this text\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"watch", required_argument, NULL, 'w'},
		{"full", no_argument, NULL, 'f'},
		{"count", required_argument, NULL, 'c'},
		{"prometheus", optional_argument, NULL, 'p'},
		{"schema", no_argument, NULL, 'S'},
		{"map", no_argument, NULL, 'm'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct astat_options o = {0};
	int c, npaths, rc = 0;

	while ((c = getopt_long(argc, argv, "w:fc:p::mjh", longopts, NULL)) !=
	       -1) {
		char *end;

		switch (c) {
		case 'w':
			errno = 0;
			o.watch = strtod(optarg, &end);
			if (errno || *end || !(o.watch > 0) ||
			    o.watch > 86400) {
				fprintf(stderr,
					"aheadfs-stat: --watch takes seconds "
					"between 0 and 86400, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'f':
			o.full = true;
			break;
		case 'c':
			errno = 0;
			o.count = strtol(optarg, &end, 10);
			if (errno || *end || o.count < 1) {
				fprintf(stderr,
					"aheadfs-stat: --count takes a "
					"positive number, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'p':
			o.prometheus = true;
			o.textfile = optarg;
			break;
		case 'S':
			return afs_schema_doc(stdout) ? 1 : 0;
		case 'm':
			o.map = true;
			break;
		case 'j':
			o.json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	npaths = argc - optind;
	if (npaths < 1 || (o.prometheus && (npaths != 1 || o.watch)) ||
	    ((o.full || o.count) && !o.watch)) {
		usage(stderr);
		return 2;
	}
	if (o.prometheus)
		return astat_prometheus(argv[optind], o.textfile);

	if (!o.watch) {
		for (int i = optind; i < argc; i++)
			rc |= astat_show_path(argv[i], &o, NULL, NULL, 0);
		return rc;
	}

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (!o.full && !o.json && !o.map)
		return astat_watch_compact(argv + optind, npaths, &o);
	/* The full view: the table again each time. */
	return astat_watch_full(argv + optind, npaths, &o);
}
