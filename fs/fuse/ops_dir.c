/* ops_dir.c - directory streams: opendir, readdir, readdirplus, releasedir,
 * fsyncdir.
 *
 * An open directory is a DIR stream on a real (not O_PATH) fd of the backing
 * directory.  Offsets given to the kernel are the backing's telldir cookies
 * (d_off), so a seek back (rewinddir, NFS readdir resumption) is a
 * seekdir().  The kernel serialises readdir calls on one open directory, so
 * the stream needs no lock.  readdirplus looks every name up (one kernel
 * lookup each, taken back when the entry does not fit the reply); "." and
 * "..", and names that cannot be looked up, are returned without
 * attributes, as the kernel expects; names removed since the stream read
 * them are skipped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/data/tbuf.h"
#include "fuse_internal.h"

static void free_dir(struct afs_open *h)
{
	struct afs_dir *d = (struct afs_dir *)h;

	closedir(d->dp);
	free(d);
}

void afs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_req_inode(req, ino);
	char proc[AFS_PROCPATH_LEN];
	struct afs_dir *d = NULL;
	struct afs_creds c;
	int fd = -1, rc;

	if (!i)
		return;
	rc = afs_req_creds_enter(req, &c, false);
	if (rc)
		goto out_put;
	/* Not openat(fd, "."): that needs search permission on the
	 * directory, where opendir() needs only read permission. */
	afs_procpath(proc, i->fd);
	fd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		rc = -errno;
	afs_creds_leave(&c);
	if (rc)
		goto out_put;
	d = calloc(1, sizeof(*d));
	if (!d) {
		rc = -ENOMEM;
		goto out_close;
	}
	d->dp = fdopendir(fd);
	if (!d->dp) {
		rc = -errno;
		goto out_free;
	}
	d->open.free = free_dir;
	afs_open_add(fs, &d->open);
	fi->fh = (uintptr_t)d;
	fi->keep_cache = 1;
	fi->cache_readdir = 0;
	afs_itable_put(&fs->itable, i);
	if (fuse_reply_open(req, fi) == -ENOENT)
		afs_open_release(fs, &d->open); /* interrupted: no releasedir */
	return;

out_free:
	free(d);
out_close:
	close(fd);
out_put:
	afs_itable_put(&fs->itable, i);
	fuse_reply_err(req, -rc);
}

static bool is_dot_or_dotdot(const char *name)
{
	return name[0] == '.' &&
	       (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t offset, struct fuse_file_info *fi, bool plus)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_dir *d = (struct afs_dir *)(uintptr_t)fi->fh;
	struct afs_inode *dir = afs_itable_get(&fs->itable, ino);
	char *buf = afs_thread_buf(size), *p = buf;
	size_t rem = size;
	int rc = 0;

	if (!dir || !buf) {
		rc = dir ? -ENOMEM : -ESTALE;
		goto out;
	}
	if (offset != d->offset) {
		seekdir(d->dp, offset);
		d->entry = NULL;
		d->offset = offset;
	}
	for (;;) {
		struct fuse_entry_param e;
		const char *name;
		size_t len;
		off_t next;

		if (!d->entry) {
			errno = 0;
			d->entry = readdir(d->dp);
			if (!d->entry) {
				rc = errno ? -errno : 0;
				break;
			}
		}
		name = d->entry->d_name;
		next = d->entry->d_off;
		if (!plus) {
			struct stat st = {
				.st_ino = afs_shown_dirent_ino(dir->fsidx,
							       d->entry->d_ino),
				.st_mode = DTTOIF(d->entry->d_type),
			};

			len = fuse_add_direntry(req, p, rem, name, &st, next);
		} else {
			bool dots = is_dot_or_dotdot(name);
			int lrc = dots ? -ENOENT
				       : afs_lookup_entry(fs, NULL, dir, name,
							  &e);

			if (lrc == -ENOENT && !dots) {
				/* removed since readdir() saw it */
				d->entry = NULL;
				d->offset = next;
				continue;
			}
			if (lrc) {
				/* "." and "..", or a name we cannot look up
				 * (in a directory readable but not
				 * searchable): the name without attributes,
				 * which the kernel does not instantiate */
				memset(&e, 0, sizeof(e));
				e.attr.st_ino = afs_shown_dirent_ino(
					dir->fsidx, d->entry->d_ino);
				e.attr.st_mode = DTTOIF(d->entry->d_type);
			}
			len = fuse_add_direntry_plus(req, p, rem, name, &e,
						     next);
			if (len > rem && e.ino)
				afs_itable_forget(&fs->itable, e.ino, 1);
		}
		if (len > rem)
			break;
		p += len;
		rem -= len;
		d->entry = NULL;
		d->offset = next;
	}
	/* An error after some entries: reply with those; the next call
	 * meets the error again. */
	if (p != buf)
		rc = 0;
out:
	if (dir)
		afs_itable_put(&fs->itable, dir);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, buf, size - rem);
}

void afs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, false);
}

void afs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, true);
}

void afs_op_releasedir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct afs_dir *d = (struct afs_dir *)(uintptr_t)fi->fh;

	afs_open_release(afs_req_fs(req), &d->open);
	fuse_reply_err(req, 0);
}

void afs_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	struct afs_dir *d = (struct afs_dir *)(uintptr_t)fi->fh;
	int fd = dirfd(d->dp);
	int res = datasync ? fdatasync(fd) : fsync(fd);

	fuse_reply_err(req, res ? errno : 0);
}
