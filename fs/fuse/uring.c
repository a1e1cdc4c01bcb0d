/* uring.c - FUSE over io_uring: the rings, the worker threads and the
 * reply hooks (uring.h).  io_uring is spoken through its system calls
 * (linux/io_uring.h), one ring of one entry per worker. */
#include "uring.h"

#include <errno.h>
#include <linux/fuse.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cache/base/count.h"
#include "fs/stats/xattr.h"
#include "log.h"

const char *const afs_uring_state_names[] = {
	[AFS_URING_OFF] = "off",
	[AFS_URING_ASKED] = "asked",
	[AFS_URING_STARTING] = "starting",
	[AFS_URING_ON] = "on",
	[AFS_URING_UNSUPPORTED] = "unsupported",
	[AFS_URING_REFUSED] = "refused",
	[AFS_URING_STOPPED] = "stopped",
	[AFS_URING_NSTATES] = NULL,
};

/* The header page holds the entry's header, then room for a request's
 * fuse_in_header and op argument laid just before the payload. */
#define HEAD_BYTES 4096
#define WAIT_NS 100000000L /* a worker looks at the stop flag this often */
#define REGISTER_RETRY_US 200

struct ring {
	int fd;
	void *sq_map, *cq_map;
	size_t sq_map_len, cq_map_len;
	struct io_uring_sqe *sqes; /* 128-byte entries (SQE128) */
	size_t sqes_len;
	unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
	unsigned *cq_head, *cq_tail, *cq_mask;
	struct io_uring_cqe *cqes;
};

struct ent {
	struct afs_uring *u;
	unsigned qid;
	int cpu; /* pinned to it, or -1 */
	struct ring ring;
	char *map; /* HEAD_BYTES of header, then the payload */
	size_t map_len;
	struct afs_uring_req_header *hdr;
	char *payload;
	size_t payload_len;
	uint64_t unique; /* the request being served */
	bool open; /* a request is being served, not yet answered */
	pthread_t thread;
	bool started;
};

struct afs_uring {
	struct fuse_session *se;
	int dev_fd;
	unsigned depth;
	int state; /* __atomic, enum afs_uring_state */
	size_t payload_len;
	unsigned nqueues;
	struct ent *ents;
	unsigned nents;
	pthread_mutex_t lock; /* the words below, for the waits on them */
	pthread_cond_t cond;
	bool go, stop; /* __atomic; changed under lock */
	unsigned made, failed; /* workers whose ring is made / failed */
	int fail_err; /* the first failure's errno */
	unsigned registered; /* __atomic: entries the kernel took */
	uint64_t requests; /* __atomic: requests served through the rings */
	uint64_t unanswered; /* __atomic: answered -EIO: no reply came */
};

static __thread struct ent *cur; /* the entry this thread serves */

static int sys_setup(unsigned entries, struct io_uring_params *p)
{
	return (int)syscall(__NR_io_uring_setup, entries, p);
}

static int sys_enter(int fd, unsigned submit, unsigned wait, unsigned flags,
		     void *arg, size_t argsz)
{
	return (int)syscall(__NR_io_uring_enter, fd, submit, wait, flags, arg,
			    argsz);
}

static void ring_close(struct ring *r)
{
	if (r->sqes)
		munmap(r->sqes, r->sqes_len);
	if (r->cq_map && r->cq_map != r->sq_map)
		munmap(r->cq_map, r->cq_map_len);
	if (r->sq_map)
		munmap(r->sq_map, r->sq_map_len);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

/* A ring of one 128-byte SQE, made by the worker that submits to it
 * (its single issuer; task work runs when it waits).  Without
 * SINGLE_ISSUER|DEFER_TASKRUN (Linux 6.1) it is made plain. */
static int ring_open(struct ring *r)
{
	static const unsigned tries[] = {
		IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER |
			IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_SQE128,
	};
	struct io_uring_params p;
	char *sq;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		memset(&p, 0, sizeof(p));
		p.flags = tries[i];
		r->fd = sys_setup(2, &p);
		if (r->fd >= 0 || errno != EINVAL)
			break;
	}
	if (r->fd < 0)
		return -errno;
	r->sq_map_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	r->cq_map_len =
		p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if ((p.features & IORING_FEAT_SINGLE_MMAP) &&
	    r->cq_map_len > r->sq_map_len)
		r->sq_map_len = r->cq_map_len;
	r->sq_map = mmap(NULL, r->sq_map_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	if (r->sq_map == MAP_FAILED) {
		r->sq_map = NULL;
		goto fail;
	}
	if (p.features & IORING_FEAT_SINGLE_MMAP) {
		r->cq_map = r->sq_map;
	} else {
		r->cq_map = mmap(NULL, r->cq_map_len, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_POPULATE, r->fd,
				 IORING_OFF_CQ_RING);
		if (r->cq_map == MAP_FAILED) {
			r->cq_map = NULL;
			goto fail;
		}
	}
	r->sqes_len = p.sq_entries * 2 * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED) {
		r->sqes = NULL;
		goto fail;
	}
	sq = r->sq_map;
	r->sq_head = (unsigned *)(sq + p.sq_off.head);
	r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
	r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned *)(sq + p.sq_off.array);
	r->cq_head = (unsigned *)((char *)r->cq_map + p.cq_off.head);
	r->cq_tail = (unsigned *)((char *)r->cq_map + p.cq_off.tail);
	r->cq_mask = (unsigned *)((char *)r->cq_map + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)r->cq_map + p.cq_off.cqes);
	return 0;
fail : {
	int rc = -errno;

	ring_close(r);
	return rc;
}
}

/* Queue the entry's one command: REGISTER or COMMIT_AND_FETCH. */
static void ring_prep(struct ent *e, uint32_t op, uint64_t commit_id,
		      struct iovec *iov)
{
	struct ring *r = &e->ring;
	unsigned tail = *r->sq_tail, idx = tail & *r->sq_mask;
	/* SQE128: each slot is two io_uring_sqe long */
	struct io_uring_sqe *sqe = &r->sqes[idx * 2];
	struct afs_uring_cmd_req *req = (void *)sqe->cmd;

	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = e->u->dev_fd;
	sqe->cmd_op = op;
	sqe->user_data = (uintptr_t)e;
	if (iov) {
		sqe->addr = (uintptr_t)iov;
		sqe->len = 2;
	}
	req->commit_id = commit_id;
	req->qid = (uint16_t)e->qid;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
}

/* Submit what is queued and, if @wait, wait up to WAIT_NS for a
 * completion.
 * Return: 1 with *@res the completion's result, 0 (none yet), or -errno. */
static int ring_wait(struct ring *r, int *res, bool wait)
{
	struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = WAIT_NS};
	struct io_uring_getevents_arg arg = {.ts = (uintptr_t)&ts};
	unsigned head, pending;
	int rc;

	head = *r->cq_head;
	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE)) {
		pending = *r->sq_tail -
			  __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
		rc = sys_enter(r->fd, pending, wait,
			       wait ? IORING_ENTER_GETEVENTS |
					       IORING_ENTER_EXT_ARG
				    : 0,
			       wait ? &arg : NULL, wait ? sizeof(arg) : 0);
		if (rc < 0 && errno != ETIME && errno != EINTR &&
		    errno != EAGAIN && errno != EBUSY)
			return -errno;
		if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
			return 0;
	}
	*res = r->cqes[head & *r->cq_mask].res;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return 1;
}

static void set_state(struct afs_uring *u, enum afs_uring_state s)
{
	__atomic_store_n(&u->state, s, __ATOMIC_RELEASE);
}

/* The first failure says why the connection went back to /dev/fuse. */
static void refused(struct afs_uring *u, const char *what, int err)
{
	int expect = AFS_URING_STARTING;

	if (__atomic_compare_exchange_n(&u->state, &expect, AFS_URING_REFUSED,
					false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		afs_log(LOG_WARNING,
			"transport=uring: %s: %s; requests go through "
			"/dev/fuse",
			what, strerror(err));
}

/* Serve the request the entry holds: rebuild it as read(2) of /dev/fuse
 * gives it, just before the payload, and let libfuse dispatch it. */
/* @out and @payload bytes of the entry's payload are @e's reply. */
static void answered(struct ent *e, const struct fuse_out_header *out,
		     size_t payload)
{
	memcpy(e->hdr->in_out, out, sizeof(*out));
	e->hdr->ring_ent_in_out.payload_sz = (uint32_t)payload;
	e->open = false;
}

/* @e's reply is EIO for request @unique. */
static void answer_eio(struct ent *e, uint64_t unique)
{
	struct fuse_out_header out = {
		.len = sizeof(out), .error = -EIO, .unique = unique};

	answered(e, &out, 0);
}

static void serve_one(struct ent *e, uint64_t *commit_id)
{
	struct afs_uring_req_header *h = e->hdr;
	struct fuse_in_header in;
	uint32_t psz = h->ring_ent_in_out.payload_sz;
	size_t oplen;
	char *start;

	memcpy(&in, h->in_out, sizeof(in));
	*commit_id = h->ring_ent_in_out.commit_id;
	e->unique = in.unique;
	if (in.len < sizeof(in) + (size_t)psz || psz > e->payload_len ||
	    in.len - sizeof(in) - psz > AFS_URING_HEADER_SZ) {
		answer_eio(e, in.unique);
		return;
	}
	oplen = in.len - sizeof(in) - psz;
	start = e->payload - oplen - sizeof(in);
	memcpy(start, &in, sizeof(in));
	memcpy(start + sizeof(in), h->op_in, oplen);
	e->open = true;
	cur = e;
	fuse_session_process_buf(e->u->se, &(struct fuse_buf){
						   .mem = start,
						   .size = in.len,
					   });
	cur = NULL;
	if (e->open) {
		/* Every request a ring carries gets a reply from libfuse;
		 * should one not, the caller gets EIO, not a hang. */
		answer_eio(e, in.unique);
		afs_count(&e->u->unanswered, 1);
	}
	afs_count(&e->u->requests, 1);
}

static bool stopping(struct afs_uring *u)
{
	return __atomic_load_n(&u->stop, __ATOMIC_ACQUIRE);
}

static void pin(struct ent *e)
{
	cpu_set_t set;

	if (e->cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(e->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Whether every queue has an entry: the first to see it says so. */
static void registered(struct afs_uring *u)
{
	int expect = AFS_URING_STARTING;

	if (__atomic_add_fetch(&u->registered, 1, __ATOMIC_ACQ_REL) != u->nents)
		return;
	if (__atomic_compare_exchange_n(&u->state, &expect, AFS_URING_ON, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		afs_log(LOG_INFO,
			"transport=uring: %u queues of %u entries, payload %zu "
			"KiB: requests come through io_uring",
			u->nqueues, u->depth, u->payload_len / 1024);
}

static void *worker(void *arg)
{
	struct ent *e = arg;
	struct afs_uring *u = e->u;
	struct iovec iov[2] = {
		{.iov_base = e->hdr, .iov_len = sizeof(*e->hdr)},
		{.iov_base = e->payload, .iov_len = e->payload_len},
	};
	uint64_t commit_id;
	int res = 0, rc;

	pin(e);
	rc = ring_open(&e->ring);
	pthread_mutex_lock(&u->lock);
	if (rc) {
		if (!u->failed++)
			u->fail_err = -rc;
	} else {
		u->made++;
	}
	pthread_cond_broadcast(&u->cond);
	while (!rc && !u->go && !u->stop)
		pthread_cond_wait(&u->cond, &u->lock);
	pthread_mutex_unlock(&u->lock);
	if (rc || stopping(u))
		return NULL;
	/* Register: an error completes at once (-EAGAIN: the kernel has
	 * not taken the INIT reply yet); a taken entry waits for a
	 * request. */
	for (;;) {
		ring_prep(e, AFS_URING_CMD_REGISTER, 0, iov);
		rc = ring_wait(&e->ring, &res, false);
		if (rc < 0) {
			refused(u, "io_uring_enter", -rc);
			return NULL;
		}
		if (rc == 0 || res >= 0)
			break;
		if (res != -EAGAIN || stopping(u)) {
			refused(u, "the kernel refused a registration", -res);
			return NULL;
		}
		usleep(REGISTER_RETRY_US);
	}
	registered(u);
	while (rc == 1 || !stopping(u)) {
		if (rc == 0) {
			rc = ring_wait(&e->ring, &res, true);
			if (rc == 0)
				continue;
			if (rc < 0) {
				refused(u, "io_uring_enter", -rc);
				break;
			}
		}
		rc = 0;
		if (res < 0) /* -ENOTCONN: the connection ended */
			break;
		serve_one(e, &commit_id);
		ring_prep(e, AFS_URING_CMD_COMMIT_AND_FETCH, commit_id, NULL);
	}
	return NULL;
}

/* The kernel's number of queues: one per possible CPU. */
static unsigned possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	unsigned last = 0, n = 0;
	char line[256], *p;

	if (f) {
		if (fgets(line, sizeof(line), f)) {
			p = line + strcspn(line, "\n");
			while (p > line && !(p[-1] >= '0' && p[-1] <= '9'))
				p--;
			while (p > line && p[-1] >= '0' && p[-1] <= '9')
				p--;
			if (sscanf(p, "%u", &last) == 1)
				n = last + 1;
		}
		fclose(f);
	}
	if (!n) {
		long c = sysconf(_SC_NPROCESSORS_CONF);

		n = c > 0 ? (unsigned)c : 1;
	}
	return n;
}

int afs_uring_create(struct fuse_session *se, unsigned depth,
		     struct afs_uring **out)
{
	struct afs_uring *u = calloc(1, sizeof(*u));

	*out = NULL;
	if (!u)
		return -ENOMEM;
	u->se = se;
	u->dev_fd = fuse_session_fd(se);
	u->depth = depth ? depth : 1;
	u->state = AFS_URING_ASKED;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	*out = u;
	return 0;
}

static int ent_make(struct afs_uring *u, struct ent *e, unsigned qid, int cpu)
{
	int rc;

	e->u = u;
	e->qid = qid;
	e->cpu = cpu;
	e->payload_len = u->payload_len;
	e->map_len = HEAD_BYTES + u->payload_len;
	e->map = mmap(NULL, e->map_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->map == MAP_FAILED) {
		e->map = NULL;
		return -errno;
	}
	e->hdr = (struct afs_uring_req_header *)e->map;
	e->payload = e->map + HEAD_BYTES;
	e->ring.fd = -1;
	rc = pthread_create(&e->thread, NULL, worker, e);
	if (rc)
		return -rc;
	e->started = true;
	return 0;
}

/* Whether CPU @q is one this process may run on (@allowed NULL: unknown). */
static bool runs_on(const cpu_set_t *allowed, unsigned q)
{
	return allowed && q < CPU_SETSIZE && CPU_ISSET(q, allowed);
}

/* Every queue's entries and threads, each thread's ring made; -errno
 * where one could not be made (what was made stays, for release()). */
static int start(struct afs_uring *u)
{
	unsigned n = possible_cpus();
	cpu_set_t allowed;
	unsigned k = 0;
	bool have_mask;
	int rc;

	have_mask = !sched_getaffinity(0, sizeof(allowed), &allowed);
	u->nqueues = n;
	/* CPUs this process may not run on get one entry, unpinned: their
	 * queue must have one for the ring to be ready */
	for (unsigned q = 0; q < n; q++)
		u->nents +=
			runs_on(have_mask ? &allowed : NULL, q) ? u->depth : 1;
	u->ents = calloc(u->nents, sizeof(*u->ents));
	if (!u->ents)
		return -ENOMEM;
	for (unsigned q = 0; q < n; q++) {
		bool ok = runs_on(have_mask ? &allowed : NULL, q);

		for (unsigned i = 0; i < (ok ? u->depth : 1); i++) {
			rc = ent_make(u, &u->ents[k++], q, ok ? (int)q : -1);
			if (rc)
				return rc;
		}
	}
	pthread_mutex_lock(&u->lock);
	while (u->made + u->failed < u->nents)
		pthread_cond_wait(&u->cond, &u->lock);
	rc = u->failed ? -u->fail_err : 0;
	pthread_mutex_unlock(&u->lock);
	return rc;
}

static void release(struct afs_uring *u)
{
	pthread_mutex_lock(&u->lock);
	__atomic_store_n(&u->stop, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	for (unsigned i = 0; i < u->nents; i++) {
		struct ent *e = &u->ents[i];

		if (e->started)
			pthread_join(e->thread, NULL);
		e->started = false;
		if (e->u)
			ring_close(&e->ring);
		if (e->map)
			munmap(e->map, e->map_len);
		e->map = NULL;
	}
	free(u->ents);
	u->ents = NULL;
	u->nents = 0;
}

void afs_uring_init_reply(struct afs_uring *u, void *arg, size_t len,
			  uint64_t offered)
{
	struct fuse_init_out o;
	uint32_t flags2;
	size_t payload;
	int rc;

	if (!u)
		return;
	if (!(offered & AFS_FUSE_OVER_IO_URING) ||
	    len < offsetof(struct fuse_init_out, flags2) + sizeof(flags2)) {
		set_state(u, AFS_URING_UNSUPPORTED);
		afs_log(LOG_INFO,
			"transport=uring: the kernel offers no FUSE over "
			"io_uring (Linux 6.14 and later, fuse module parameter "
			"enable_uring=Y): requests go through /dev/fuse");
		return;
	}
	memset(&o, 0, sizeof(o));
	memcpy(&o, arg, len < sizeof(o) ? len : sizeof(o));
	if (!(o.flags & FUSE_INIT_EXT)) {
		set_state(u, AFS_URING_UNSUPPORTED);
		return;
	}
	payload = o.max_write > 8192 ? o.max_write : 8192;
	if ((size_t)o.max_pages * 4096 > payload)
		payload = (size_t)o.max_pages * 4096;
	u->payload_len = (payload + 4095) & ~(size_t)4095;
	set_state(u, AFS_URING_STARTING);
	rc = start(u);
	if (rc) {
		refused(u, "cannot set up the rings", -rc);
		release(u);
		return;
	}
	flags2 = o.flags2 | (uint32_t)(AFS_FUSE_OVER_IO_URING >> 32);
	memcpy((char *)arg + offsetof(struct fuse_init_out, flags2), &flags2,
	       sizeof(flags2));
}

void afs_uring_init_sent(struct afs_uring *u, bool ok)
{
	if (!u || !u->nents)
		return;
	if (!ok) {
		release(u);
		set_state(u, AFS_URING_REFUSED);
		return;
	}
	pthread_mutex_lock(&u->lock);
	__atomic_store_n(&u->go, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

/* The reply's header into the entry; the rest is in the payload. */
bool afs_uring_take_reply(const struct iovec *iov, int count, ssize_t *res)
{
	struct ent *e = cur;
	const struct fuse_out_header *out;
	size_t n = 0;

	if (__builtin_expect(!e, 1) || !e->open || count < 1 ||
	    iov[0].iov_len != sizeof(*out))
		return false;
	out = iov[0].iov_base;
	if (out->unique != e->unique)
		return false;
	for (int i = 1; i < count; i++) {
		if (iov[i].iov_len > e->payload_len - n) {
			errno = EINVAL;
			*res = -1;
			return true;
		}
		if (iov[i].iov_base != e->payload + n)
			memcpy(e->payload + n, iov[i].iov_base, iov[i].iov_len);
		n += iov[i].iov_len;
	}
	answered(e, out, n);
	*res = (ssize_t)(sizeof(*out) + n);
	return true;
}

/* Read exactly @len bytes of the pipe @fd into @buf. */
static int read_full(int fd, char *buf, size_t len)
{
	while (len) {
		ssize_t n = read(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

bool afs_uring_take_splice(int fdin, size_t len, ssize_t *res)
{
	struct ent *e = cur;
	struct fuse_out_header out;
	int rc;

	if (__builtin_expect(!e, 1) || !e->open)
		return false;
	/* The only reply this thread sends while it serves a request from
	 * a ring is that request's (aheadfs sends no spliced
	 * notification). */
	if (len < sizeof(out) || len - sizeof(out) > e->payload_len) {
		errno = EINVAL;
		*res = -1;
		return true;
	}
	rc = read_full(fdin, (char *)&out, sizeof(out));
	if (!rc)
		rc = read_full(fdin, e->payload, len - sizeof(out));
	if (rc || out.unique != e->unique) {
		errno = rc ? -rc : EINVAL;
		*res = -1;
		return true;
	}
	answered(e, &out, len - sizeof(out));
	*res = (ssize_t)len;
	return true;
}

void afs_uring_stop(struct afs_uring *u)
{
	if (!u || !u->nents)
		return;
	release(u);
	if (__atomic_load_n(&u->state, __ATOMIC_ACQUIRE) == AFS_URING_ON)
		set_state(u, AFS_URING_STOPPED);
}

void afs_uring_free(struct afs_uring *u)
{
	if (!u)
		return;
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	free(u);
}

void afs_uring_stats(const struct afs_uring *u, struct afs_xattr_transport *out)
{
	if (!u) {
		out->mode = "dev";
		out->state = afs_uring_state_names[AFS_URING_OFF];
		out->requests = 0;
		out->unanswered = 0;
		return;
	}
	out->mode = "uring";
	out->state = afs_uring_state_names[__atomic_load_n(&u->state,
							   __ATOMIC_ACQUIRE)];
	out->requests = afs_count_read(&u->requests);
	out->unanswered = afs_count_read(&u->unanswered);
}
