/* main.c - the aheadfs program; everything is in afs_main() (fs/daemon.c). */
#include "fs/fs.h"

int main(int argc, char **argv)
{
	return afs_main(argc, argv);
}
