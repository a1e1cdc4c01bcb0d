/* nfs_read.c - NFS readers for the re-export rows of run.sh: libnfs clients
 * with many READs in flight, each reader on its own connection.
 *
 * Usage: nfs_read MODE URL... [options]
 *   URL      nfs://SERVER/EXPORT/FILE[?version=3&nfsport=N&mountport=N]
 *            (libnfs's URL syntax)
 *   MODE     own         --readers readers, reader i reads URL i (modulo the
 *                        URLs given) from start to end
 *            shared      --readers readers of the first URL taking the next
 *                        --bs of one sequential stream in turn: one stream
 *                        served by the server's threads together
 *            interleave  one reader, --streams streams started evenly
 *                        through the first URL, one request of each in turn
 * Options: --readers N (default 4), --depth N READs in flight per reader
 *          (default 1; interleave: one per stream), --bs N[K|M] (default
 *          128 KiB), --streams N (default 8), --limit N[K|M|G] (bytes of each
 *          file), --seconds S (stop issuing after S seconds).
 * The clock starts once every reader has mounted and opened its file.
 * Prints one line like read_patterns: "nfs-MODE bytes seconds MB/s requests".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_nanosleep, pthread_barrier_t; the build defines it */
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <nfsc/libnfs.h>

#define MAX_READERS 64

struct opts {
	const char *mode;
	char **urls;
	int nurls;
	unsigned int readers, depth, streams;
	uint64_t bs, limit;
	double seconds;
};

struct reader {
	const struct opts *o;
	const char *url;
	struct nfs_context *nfs;
	struct nfsfh *fh;
	uint64_t size, issued, inflight, bytes, requests;
	uint64_t next_own; /* own: the next offset */
	unsigned int index;
	int error;
};

static uint64_t shared_next; /* __atomic: shared mode's stream position */
static double deadline, t0;
/* Readers mount and open before the clock starts: opened, then go. */
static pthread_barrier_t opened, go;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);

	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	else if (*end == 'g' || *end == 'G')
		v <<= 30, end++;
	if (*end || !v) {
		fprintf(stderr, "nfs_read: bad size '%s'\n", s);
		exit(2);
	}
	return v;
}

static void read_done(int status, struct nfs_context *nfs, void *data,
		      void *priv)
{
	struct reader *r = priv;

	(void)nfs;
	r->inflight--;
	if (status < 0) {
		if (!r->error)
			r->error = -status;
		fprintf(stderr, "nfs_read: READ: %s\n", (char *)data);
		return;
	}
	r->bytes += (uint64_t)status;
	r->requests++;
}

/* The next offset this reader asks for, or UINT64_MAX when it is done. */
static uint64_t next_offset(struct reader *r)
{
	const struct opts *o = r->o;
	uint64_t off;

	if (deadline > 0 && now() >= deadline)
		return UINT64_MAX;
	if (!strcmp(o->mode, "shared")) {
		off = __atomic_fetch_add(&shared_next, o->bs, __ATOMIC_RELAXED);
	} else if (!strcmp(o->mode, "interleave")) {
		uint64_t stride = r->size / o->streams / o->bs * o->bs;
		uint64_t k = r->issued, round = k / o->streams;

		if (round * o->bs >= stride)
			return UINT64_MAX;
		off = (k % o->streams) * stride + round * o->bs;
	} else {
		off = r->next_own;
		r->next_own += o->bs;
	}
	return off < r->size ? off : UINT64_MAX;
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	const struct opts *o = r->o;
	struct nfs_url *url;
	struct nfs_stat_64 st;
	unsigned int depth = o->depth;
	bool more = true;
	char id[64];

	r->nfs = nfs_init_context();
	if (!r->nfs) {
		r->error = ENOMEM;
		pthread_barrier_wait(&opened);
		pthread_barrier_wait(&go);
		return NULL;
	}
	/* NFSv4: every reader a client of its own (one id per process and
	 * reader), else the server takes them for one client's restarts. */
	snprintf(id, sizeof(id), "nfs_read-%ld-%u", (long)getpid(), r->index);
	nfs4_set_client_name(r->nfs, id);
	nfs4_set_verifier(r->nfs, id);
	url = nfs_parse_url_full(r->nfs, r->url);
	if (!url) {
		fprintf(stderr, "nfs_read: %s: %s\n", r->url,
			nfs_get_error(r->nfs));
		r->error = EINVAL;
		pthread_barrier_wait(&opened);
		pthread_barrier_wait(&go);
		goto out;
	}
	if (nfs_mount(r->nfs, url->server, url->path) ||
	    nfs_open(r->nfs, url->file, O_RDONLY, &r->fh) ||
	    nfs_fstat64(r->nfs, r->fh, &st)) {
		fprintf(stderr, "nfs_read: %s: %s\n", r->url,
			nfs_get_error(r->nfs));
		r->error = EIO;
		nfs_destroy_url(url);
		pthread_barrier_wait(&opened);
		pthread_barrier_wait(&go);
		goto out;
	}
	nfs_destroy_url(url);
	pthread_barrier_wait(&opened);
	pthread_barrier_wait(&go);
	r->size = st.nfs_size;
	if (o->limit && o->limit < r->size)
		r->size = o->limit;
	if (!strcmp(o->mode, "interleave"))
		depth = o->streams;
	while (!r->error && (more || r->inflight)) {
		struct pollfd pfd;

		while (more && r->inflight < depth) {
			uint64_t off = next_offset(r);

			if (off == UINT64_MAX) {
				more = false;
				break;
			}
			if (nfs_pread_async(r->nfs, r->fh, off, o->bs,
					    read_done, r)) {
				fprintf(stderr, "nfs_read: %s\n",
					nfs_get_error(r->nfs));
				r->error = EIO;
				more = false;
				break;
			}
			r->issued++;
			r->inflight++;
		}
		if (!more && !r->inflight)
			break;
		pfd.fd = nfs_get_fd(r->nfs);
		pfd.events = (short)nfs_which_events(r->nfs);
		if (poll(&pfd, 1, 1000) < 0) {
			if (errno == EINTR)
				continue;
			r->error = errno;
			break;
		}
		if (nfs_service(r->nfs, pfd.revents) < 0) {
			fprintf(stderr, "nfs_read: %s\n",
				nfs_get_error(r->nfs));
			r->error = EIO;
			break;
		}
	}
	nfs_close(r->nfs, r->fh);
out:
	nfs_destroy_context(r->nfs);
	return NULL;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.readers = 4, .depth = 1, .streams = 8, .bs = 128 << 10};
	static struct reader r[MAX_READERS];
	pthread_t t[MAX_READERS];
	uint64_t bytes = 0, requests = 0;
	int i, error = 0;
	double t1;

	if (argc < 3) {
		fprintf(stderr, "usage: nfs_read own|shared|interleave URL... "
				"[--readers N] [--depth N] [--bs N] "
				"[--streams N] [--limit N] [--seconds S]\n");
		return 2;
	}
	o.mode = argv[1];
	o.urls = argv + 2;
	for (i = 2; i < argc && strncmp(argv[i], "--", 2); i++)
		o.nurls++;
	for (; i < argc; i += 2) {
		if (i + 1 >= argc) {
			fprintf(stderr, "nfs_read: %s needs a value\n",
				argv[i]);
			return 2;
		}
		if (!strcmp(argv[i], "--readers"))
			o.readers = (unsigned int)parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--depth"))
			o.depth = (unsigned int)parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--streams"))
			o.streams = (unsigned int)parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--bs"))
			o.bs = parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--limit"))
			o.limit = parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--seconds"))
			o.seconds = strtod(argv[i + 1], NULL);
		else {
			fprintf(stderr, "nfs_read: unknown option %s\n",
				argv[i]);
			return 2;
		}
	}
	if (strcmp(o.mode, "own") && strcmp(o.mode, "shared") &&
	    strcmp(o.mode, "interleave")) {
		fprintf(stderr, "nfs_read: unknown mode '%s'\n", o.mode);
		return 2;
	}
	if (!o.nurls) {
		fprintf(stderr, "nfs_read: no URL\n");
		return 2;
	}
	if (!strcmp(o.mode, "interleave"))
		o.readers = 1;
	if (o.readers > MAX_READERS)
		o.readers = MAX_READERS;

	pthread_barrier_init(&opened, NULL, o.readers + 1);
	pthread_barrier_init(&go, NULL, o.readers + 1);
	for (unsigned int k = 0; k < o.readers; k++) {
		r[k] = (struct reader){
			.o = &o, .url = o.urls[(int)k % o.nurls], .index = k};
		if (!strcmp(o.mode, "shared") || !strcmp(o.mode, "interleave"))
			r[k].url = o.urls[0];
		if (pthread_create(&t[k], NULL, reader_main, &r[k])) {
			fprintf(stderr, "nfs_read: pthread_create failed\n");
			return 1;
		}
	}
	pthread_barrier_wait(&opened);
	t0 = now();
	if (o.seconds > 0)
		deadline = t0 + o.seconds;
	pthread_barrier_wait(&go);
	for (unsigned int k = 0; k < o.readers; k++) {
		pthread_join(t[k], NULL);
		bytes += r[k].bytes;
		requests += r[k].requests;
		if (r[k].error && !error)
			error = r[k].error;
	}
	t1 = now();
	if (error) {
		fprintf(stderr, "nfs_read: %s\n", strerror(error));
		return 1;
	}
	printf("nfs-%s %" PRIu64 " %.3f %.1f %" PRIu64 "\n", o.mode, bytes,
	       t1 - t0, (double)bytes / (t1 - t0) / 1e6, requests);
	return 0;
}
