/* modes.c - the name table of -o watch= (watch.h), apart from the watcher
 * so that the option parser links without it (tests/fuzz). */
#include "fs/watch/watch.h"

const char *const afs_watch_mode_names[] = {"auto", "fanotify", "inotify",
					    "off", NULL};
