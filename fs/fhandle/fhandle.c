/* fhandle.c - rebuilding backing file handles; see fhandle.h. */
#include "fs/fhandle/fhandle.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>

#define EXT4_MAGIC 0xEF53
#define XFS_MAGIC 0x58465342
#define FILEID_INO32_GEN 1 /* {u32 ino, u32 gen}: ext4, small xfs */
#define XFS_FILEID_INO64_GEN 0x81 /* {u64 ino, u32 gen}, packed: xfs */

bool afs_fhandle_decode(int type, const void *bytes, unsigned int len,
			uint64_t *ino, uint32_t *gen)
{
	const unsigned char *b = bytes;
	uint32_t i32;

	if (type == FILEID_INO32_GEN && len == 8) {
		memcpy(&i32, b, 4);
		memcpy(gen, b + 4, 4);
		*ino = i32;
		return true;
	}
	if (type == XFS_FILEID_INO64_GEN && len == 12) {
		memcpy(ino, b, 8);
		memcpy(gen, b + 8, 4);
		return true;
	}
	return false;
}

/* (ino, generation) from a handle of one of the two layouts above. */
static bool handle_parse(const struct file_handle *fh, uint64_t *ino,
			 uint32_t *gen)
{
	return afs_fhandle_decode(fh->handle_type, fh->f_handle,
				  fh->handle_bytes, ino, gen);
}

/* The inverse; false if @ino does not fit @type. */
static bool handle_build(struct file_handle *fh, int type, uint64_t ino,
			 uint32_t gen)
{
	unsigned char *b = fh->f_handle;
	uint32_t i32 = (uint32_t)ino;

	fh->handle_type = type;
	if (type == FILEID_INO32_GEN) {
		if (ino > UINT32_MAX)
			return false;
		fh->handle_bytes = 8;
		memcpy(b, &i32, 4);
		memcpy(b + 4, &gen, 4);
		return true;
	}
	fh->handle_bytes = 12;
	memcpy(b, &ino, 8);
	memcpy(b + 8, &gen, 4);
	return true;
}

/*
 * XFS checks the generation of a handle, so a handle rebuilt from the inode
 * number needs the inode's current generation: XFS_IOC_BULKSTAT (v5, Linux
 * 5.4+, CAP_SYS_ADMIN) reports it from the inode number alone.  Only the
 * request header's layout and two fields of the first record are used
 * (bs_ino at offset 0, bs_gen at 64: the record starts with eight 64-bit
 * fields), so the records' full size need not be known here.
 */
struct xfs_bulk_ireq_hdr {
	uint64_t ino;
	uint32_t flags;
	uint32_t icount;
	uint32_t ocount;
	uint32_t agno;
	uint64_t reserved[5];
};
#define XFS_IOC_BULKSTAT_V5 _IOR('X', 127, struct xfs_bulk_ireq_hdr)

static int xfs_generation(int mount_fd, uint64_t ino, uint32_t *gen)
{
	union {
		struct xfs_bulk_ireq_hdr hdr;
		unsigned char bytes[sizeof(struct xfs_bulk_ireq_hdr) + 1024];
	} req;
	const unsigned char *rec = req.bytes + sizeof(req.hdr);
	uint64_t got;

	memset(&req, 0, sizeof(req));
	req.hdr.ino = ino; /* first inode at or after this number */
	req.hdr.icount = 1;
	if (ioctl(mount_fd, XFS_IOC_BULKSTAT_V5, &req) < 0)
		return -errno;
	memcpy(&got, rec, sizeof(got));
	if (req.hdr.ocount != 1 || got != ino)
		return -ESTALE; /* no such inode (any more) */
	memcpy(gen, rec + 64, sizeof(*gen));
	return 0;
}

/* The handle type (FILEID_INO32_GEN or XFS_FILEID_INO64_GEN) when handles on
 * this filesystem can be rebuilt from the inode number alone, else 0;
 * *@gen_lookup if the generation must be looked up for that (XFS). */
static int probe_type(int fd, bool *gen_lookup)
{
	struct statfs sfs;
	struct {
		struct file_handle fh;
		unsigned char bytes[MAX_HANDLE_SZ];
	} h;
	uint64_t ino;
	uint32_t gen;
	int mnt_id;

	if (fstatfs(fd, &sfs) < 0)
		return 0;
	if (sfs.f_type != EXT4_MAGIC && sfs.f_type != XFS_MAGIC)
		return 0;
	*gen_lookup = sfs.f_type == XFS_MAGIC;
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(fd, "", &h.fh, &mnt_id, AT_EMPTY_PATH) < 0 ||
	    !handle_parse(&h.fh, &ino, &gen))
		return 0;
	return h.fh.handle_type;
}

uint32_t afs_fhandle_generation(int fd)
{
	struct {
		struct file_handle fh;
		unsigned char bytes[MAX_HANDLE_SZ];
	} h;
	uint32_t gen;
	uint64_t ino;
	int mnt_id;

	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(fd, "", &h.fh, &mnt_id, AT_EMPTY_PATH) < 0 ||
	    !handle_parse(&h.fh, &ino, &gen))
		return 0;
	return gen;
}

struct afs_fhandle_fs afs_fhandle_probe(int dir_fd)
{
	struct afs_fhandle_fs fs = {0};

	fs.type = probe_type(dir_fd, &fs.gen_lookup);
	if (!fs.type)
		fs.gen_lookup = false;
	return fs;
}

int afs_fhandle_open(int mount_fd, const struct afs_fhandle_fs *fs,
		     uint64_t ino, int flags)
{
	struct {
		struct file_handle fh;
		unsigned char bytes[16];
	} h;
	uint32_t gen = 0;
	int fd;

	if (!fs->type)
		return -ESTALE;
	/* Generation 0: ext4 then skips its generation check.  XFS checks
	 * it: ask XFS for the current one. */
	if (fs->gen_lookup && xfs_generation(mount_fd, ino, &gen))
		return -ESTALE;
	if (!handle_build(&h.fh, fs->type, ino, gen))
		return -ESTALE;
	fd = open_by_handle_at(mount_fd, &h.fh, flags);
	if (fd < 0)
		return errno == EMFILE || errno == ENFILE ? -errno : -ESTALE;
	return fd;
}
