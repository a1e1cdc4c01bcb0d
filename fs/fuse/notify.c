/* notify.c - the notifier: kernel page-cache invalidations sent from a
 * thread that serves no request; see notify.h. */
#include "notify.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#define QUEUE_MAX 64

struct inval {
	uint64_t nodeid, off;
};

struct afs_notifier {
	struct fuse_session *se;
	pthread_t thread;
	pthread_mutex_t lock; /* guards everything below */
	pthread_cond_t cond; /* queued, or stop */
	struct inval queue[QUEUE_MAX];
	unsigned int n;
	bool stop;
	uint64_t sent, dropped;
};

static void *notifier_main(void *arg)
{
	struct afs_notifier *nt = arg;
	struct inval batch[QUEUE_MAX];

	pthread_mutex_lock(&nt->lock);
	for (;;) {
		unsigned int n;

		while (!nt->n && !nt->stop)
			pthread_cond_wait(&nt->cond, &nt->lock);
		if (nt->stop)
			break;
		n = nt->n;
		for (unsigned int k = 0; k < n; k++)
			batch[k] = nt->queue[k];
		nt->n = 0;
		pthread_mutex_unlock(&nt->lock);
		/* -ENOENT: the kernel has forgotten the inode, nothing to
		 * drop. */
		for (unsigned int k = 0; k < n; k++)
			(void)fuse_lowlevel_notify_inval_inode(
				nt->se, batch[k].nodeid, (off_t)batch[k].off,
				0);
		pthread_mutex_lock(&nt->lock);
		nt->sent += n;
	}
	pthread_mutex_unlock(&nt->lock);
	return NULL;
}

int afs_notifier_start(struct fuse_session *se, struct afs_notifier **out)
{
	struct afs_notifier *nt = calloc(1, sizeof(*nt));
	int rc;

	if (!nt)
		return -ENOMEM;
	nt->se = se;
	pthread_mutex_init(&nt->lock, NULL);
	pthread_cond_init(&nt->cond, NULL);
	rc = pthread_create(&nt->thread, NULL, notifier_main, nt);
	if (rc) {
		pthread_cond_destroy(&nt->cond);
		pthread_mutex_destroy(&nt->lock);
		free(nt);
		return -rc;
	}
	*out = nt;
	return 0;
}

void afs_notifier_inval(struct afs_notifier *nt, uint64_t nodeid, uint64_t off)
{
	unsigned int k;

	if (!nt)
		return;
	pthread_mutex_lock(&nt->lock);
	for (k = 0; k < nt->n; k++)
		if (nt->queue[k].nodeid == nodeid)
			break;
	if (k < nt->n) {
		if (off < nt->queue[k].off)
			nt->queue[k].off = off;
	} else if (nt->n < QUEUE_MAX) {
		nt->queue[nt->n++] = (struct inval){nodeid, off};
		pthread_cond_signal(&nt->cond);
	} else {
		nt->dropped++;
	}
	pthread_mutex_unlock(&nt->lock);
}

void afs_notifier_stop(struct afs_notifier *nt, uint64_t *sent,
		       uint64_t *dropped)
{
	*sent = *dropped = 0;
	if (!nt)
		return;
	pthread_mutex_lock(&nt->lock);
	nt->stop = true;
	pthread_cond_signal(&nt->cond);
	pthread_mutex_unlock(&nt->lock);
	pthread_join(nt->thread, NULL);
	*sent = nt->sent;
	*dropped = nt->dropped;
	pthread_cond_destroy(&nt->cond);
	pthread_mutex_destroy(&nt->lock);
	free(nt);
}
