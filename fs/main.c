/* main.c - the aheadfs program; everything is in afs_main() (fs/fuse/daemon.c). */
#include "fs/fuse/daemon.h"

int main(int argc, char **argv)
{
	return afs_main(argc, argv);
}
