/* geometry.c - stripe geometry from sysfs and option overrides.
 *
 * Why it matters: a RAID0 of N disks reads at N times one disk's speed only
 * when N chunk-sized I/Os are in flight at once.  backing_pages.c splits
 * runs on chunk boundaries and issues the pieces in parallel; ra.c caps
 * windows at ra_auto_max_bytes(), at least 2 x stripe width, so one window
 * keeps every disk busy twice over, and rounds window ends to stripe
 * boundaries (ra_geometry_round_end()).
 *
 * Chunk and stripe are applied to file offsets: a filesystem created with
 * the stripe hint (mkfs.ext4 -E stride=,stripe_width=, xfs sunit/swidth)
 * allocates large files stripe-aligned, so file chunks mostly are disk
 * chunks.  On an unaligned allocation the split costs one extra I/O per
 * chunk, no correctness.
 */
#include "geometry.h"

#include "ra/ra.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define GEOM_PAGE 4096u
#define GEOM_MAX_DISKS 4096u
/* The largest chunk or stripe believed is RA_MAX_BYTES_LIMIT: beyond that
 * a value is garbage. */
/* io_min below this is a sector or page size, not a RAID chunk. */
#define GEOM_MIN_IO_MIN_CHUNK (16u * 1024)

/* One sysfs value: absent, a number, or garbage. */
enum sysval { SYSVAL_ABSENT, SYSVAL_OK, SYSVAL_BAD };

/*
 * Read <dir>/<name> into @buf (NUL-terminated, trailing newline removed).
 * Returns SYSVAL_ABSENT when the file does not exist or cannot be read.
 */
static enum sysval read_text(const char *dir, const char *name, char *buf,
			     size_t len)
{
	char path[4096];
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		return SYSVAL_ABSENT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return SYSVAL_ABSENT;
	do {
		n = read(fd, buf, len - 1);
	} while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return SYSVAL_ABSENT;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return SYSVAL_OK;
}

/* A plain decimal number, nothing else; @max bounds it. */
static bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return false;
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

struct probe {
	const char *dir;
	struct ra_geometry *g;
};

/*
 * Read a numeric file.  Absent: *@out = 0, true.  Garbage: fills g->why,
 * returns false.
 */
static bool read_num(struct probe *pr, const char *name, uint64_t max,
		     uint64_t *out)
{
	char buf[64];

	*out = 0;
	if (read_text(pr->dir, name, buf, sizeof(buf)) == SYSVAL_ABSENT)
		return true;
	if (parse_u64(buf, max, out))
		return true;
	snprintf(pr->g->why, sizeof(pr->g->why), "%s: not a number: '%.40s'",
		 name, buf);
	return false;
}

/* Forget every probed value except g->why: the device counts as unstriped. */
static void make_invalid(struct ra_geometry *g)
{
	char why[sizeof(g->why)];

	memcpy(why, g->why, sizeof(why));
	memset(g, 0, sizeof(*g));
	memcpy(g->why, why, sizeof(why));
	g->source = RA_GEOM_INVALID;
	g->max_window = ra_auto_max_bytes(0, 0, 0);
}

static void set_invalid(struct ra_geometry *g, const char *fmt, uint64_t v)
{
	snprintf(g->why, sizeof(g->why), fmt, v);
	make_invalid(g);
}

/* Disks that carry distinct data in one stripe, from md/level. */
static unsigned int data_disks_for_level(const char *level, unsigned int disks)
{
	if (!strcmp(level, "raid4") || !strcmp(level, "raid5"))
		return disks > 1 ? disks - 1 : 1;
	if (!strcmp(level, "raid6"))
		return disks > 2 ? disks - 2 : 1;
	if (!strcmp(level, "raid1"))
		return 1;
	if (!strcmp(level, "raid10"))
		return disks > 1 ? disks / 2 : 1; /* near=2, the default */
	return disks; /* raid0, linear is not striped but has no chunk */
}

uint64_t ra_auto_max_bytes(uint64_t stripe, uint64_t floor, uint64_t max_io)
{
	uint64_t cap = RA_AUTO_MAX_MIN;

	if (floor > cap)
		cap = floor;
	if (stripe * 2 > cap)
		cap = stripe * 2;
	if (max_io > GEOM_PAGE && cap > max_io && cap % max_io)
		cap += max_io - cap % max_io;
	return cap;
}

int ra_geometry_probe(const char *sysfs_root, dev_t dev, struct ra_geometry *g)
{
	uint64_t io_min, io_opt, chunk, disks, is_part, max_kb = 0;
	char dir[4096], level[32] = "";
	struct probe pr = {.dir = dir, .g = g};
	struct stat st;
	int n;

	if (!sysfs_root || !g)
		return -EINVAL;
	memset(g, 0, sizeof(*g));
	g->max_window = ra_auto_max_bytes(0, 0, 0);
	/* tmpfs, overlay, FUSE, NFS: anonymous device, no queue. */
	if (major(dev) == 0)
		return 0;

	n = snprintf(dir, sizeof(dir), "%s/dev/block/%u:%u", sysfs_root,
		     major(dev), minor(dev));
	if (n >= (int)sizeof(dir) || stat(dir, &st) || !S_ISDIR(st.st_mode))
		return 0; /* no such device in this sysfs: not striped */
	/* A partition's queue and md attributes live on its disk, the parent
	 * directory of the (symlinked) partition directory. */
	if (!read_num(&pr, "partition", UINT32_MAX, &is_part))
		goto garbage;
	if (is_part) {
		if (strlen(dir) + 3 >= sizeof(dir))
			return 0;
		strcat(dir, "/..");
	}

	if (!read_num(&pr, "queue/minimum_io_size", RA_MAX_BYTES_LIMIT,
		      &io_min) ||
	    !read_num(&pr, "queue/optimal_io_size", RA_MAX_BYTES_LIMIT,
		      &io_opt) ||
	    !read_num(&pr, "md/chunk_size", RA_MAX_BYTES_LIMIT, &chunk) ||
	    !read_num(&pr, "md/raid_disks", GEOM_MAX_DISKS, &disks))
		goto garbage;
	read_text(dir, "md/level", level, sizeof(level));
	/* Only a hint for the cap: a missing or odd value is no error. */
	if (!read_num(&pr, "queue/max_sectors_kb", RA_MAX_BYTES_LIMIT >> 10,
		      &max_kb))
		g->why[0] = '\0';
	else if (max_kb && (max_kb << 10) % GEOM_PAGE == 0)
		g->max_io = max_kb << 10;

	g->io_min = io_min;
	g->io_opt = io_opt;
	g->disks = (unsigned int)disks;
	if (chunk) {
		if (chunk % GEOM_PAGE) {
			set_invalid(g,
				    "md/chunk_size: %" PRIu64
				    " is not a multiple of 4096",
				    chunk);
			return 0;
		}
		g->data_disks = data_disks_for_level(level, g->disks ?: 1);
		g->chunk = chunk;
		g->stripe = io_opt ?: chunk * g->data_disks;
		g->source = RA_GEOM_MD;
	} else if (io_opt) {
		if (io_opt % GEOM_PAGE) {
			/* A device-reported io_opt that is not page-sized
			 * cannot drive page-granular splits: ignore it. */
			g->max_window = ra_auto_max_bytes(0, 0, 0);
			return 0;
		}
		if (io_min >= GEOM_MIN_IO_MIN_CHUNK &&
		    io_min % GEOM_PAGE == 0 && io_opt % io_min == 0 &&
		    io_opt / io_min >= 2)
			g->chunk = io_min; /* hardware RAID: chunk, stripe */
		else
			g->chunk = io_opt;
		g->stripe = io_opt;
		g->data_disks = (unsigned int)(io_opt / g->chunk);
		g->source = RA_GEOM_QUEUE;
	}
	/* io_opt from md is chunk x data disks; anything else is garbage. */
	if (g->stripe && (g->stripe % g->chunk || g->stripe % GEOM_PAGE)) {
		set_invalid(g,
			    "stripe %" PRIu64 " is not a multiple of the chunk",
			    g->stripe);
		return 0;
	}
	g->max_window = ra_auto_max_bytes(g->stripe, 0, 0);
	return 0;

garbage:
	make_invalid(g); /* read_num() filled g->why */
	return 0;
}

int ra_geometry_override(struct ra_geometry *g, uint64_t stripe, uint64_t chunk)
{
	struct ra_geometry n;

	if (!g)
		return -EINVAL;
	if (!stripe && !chunk)
		return 0;
	n = *g;
	if (stripe % GEOM_PAGE || chunk % GEOM_PAGE ||
	    stripe > RA_MAX_BYTES_LIMIT || chunk > RA_MAX_BYTES_LIMIT)
		return -EINVAL;
	if (chunk && !stripe) {
		/* Keep the probed number of data disks if any. */
		stripe = chunk * (n.data_disks ?: 1);
		if (stripe > RA_MAX_BYTES_LIMIT)
			return -EINVAL;
	} else if (stripe && !chunk) {
		chunk = n.chunk && n.chunk <= stripe && stripe % n.chunk == 0
				? n.chunk
				: stripe;
	}
	if (chunk > stripe || stripe % chunk)
		return -EINVAL;
	n.chunk = chunk;
	n.stripe = stripe;
	n.data_disks = (unsigned int)(stripe / chunk);
	n.source = RA_GEOM_OVERRIDE;
	n.why[0] = '\0';
	n.max_window = ra_auto_max_bytes(stripe, 0, 0);
	*g = n;
	return 0;
}

uint64_t ra_geometry_round_end(const struct ra_geometry *g, uint64_t start,
			       uint64_t end, uint64_t min_end, uint64_t limit)
{
	uint64_t sp, up, down;

	if (!g || g->stripe < GEOM_PAGE)
		return end;
	sp = g->stripe / GEOM_PAGE;
	if (end % sp == 0)
		return end;
	down = end - end % sp;
	if (end <= UINT64_MAX - sp) {
		up = down + sp;
		if (up <= limit)
			return up;
	}
	if (down > start && down >= min_end)
		return down;
	return end;
}

const char *ra_geometry_source_name(enum ra_geometry_source s)
{
	switch (s) {
	case RA_GEOM_NONE:
		return "none";
	case RA_GEOM_MD:
		return "md";
	case RA_GEOM_QUEUE:
		return "queue";
	case RA_GEOM_OVERRIDE:
		return "override";
	case RA_GEOM_INVALID:
		return "invalid";
	}
	return "unknown";
}

/* ---------------------------------------------------------------------- */
/* The devices probed so far                                               */

int ra_geometry_cache_init(struct ra_geometry_cache *gc)
{
	gc->nr = 0;
	return -pthread_mutex_init(&gc->lock, NULL);
}

void ra_geometry_cache_destroy(struct ra_geometry_cache *gc)
{
	pthread_mutex_destroy(&gc->lock);
}

void ra_geometry_cache_get(struct ra_geometry_cache *gc, const char *sysfs_root,
			   dev_t dev, uint64_t stripe, uint64_t chunk,
			   struct ra_geometry *g)
{
	pthread_mutex_lock(&gc->lock);
	for (unsigned int i = 0; i < gc->nr; i++) {
		if (gc->dev[i].dev == dev) {
			*g = gc->dev[i].g;
			pthread_mutex_unlock(&gc->lock);
			return;
		}
	}
	pthread_mutex_unlock(&gc->lock);

	/* Probe outside the lock (it reads files); a racing probe of the
	 * same device finds the same numbers. */
	ra_geometry_probe(sysfs_root, dev, g);
	if (stripe || chunk) {
		/* Checked at create; on a device whose probed values clash
		 * with the override, the override applies to a clean slate. */
		if (ra_geometry_override(g, stripe, chunk)) {
			memset(g, 0, sizeof(*g));
			ra_geometry_override(g, stripe, chunk);
		}
	}
	pthread_mutex_lock(&gc->lock);
	if (gc->nr < RA_GEOM_CACHE) {
		gc->dev[gc->nr].dev = dev;
		gc->dev[gc->nr].g = *g;
		gc->nr++;
	}
	pthread_mutex_unlock(&gc->lock);
}
