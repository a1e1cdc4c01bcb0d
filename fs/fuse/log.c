/* log.c - stderr or syslog (see log.h). */
#include "log.h"

#include <fuse_log.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool use_syslog;
static bool capture; /* keep libfuse's messages for afs_log_captured() */
static char captured[512];

static void fuse_log_handler(enum fuse_log_level level, const char *fmt,
			     va_list ap)
{
	if (capture) {
		size_t len = strlen(captured);

		if (len && len + 2 < sizeof(captured)) {
			strcpy(captured + len, "; ");
			len += 2;
		}
		vsnprintf(captured + len, sizeof(captured) - len, fmt, ap);
		len = strlen(captured);
		while (len && captured[len - 1] == '\n')
			captured[--len] = '\0';
	} else if (use_syslog) {
		vsyslog((int)level, fmt, ap);
	} else {
		vfprintf(stderr, fmt, ap);
	}
}

void afs_log_to_syslog(void)
{
	openlog("aheadfs", LOG_PID, LOG_DAEMON);
	use_syslog = true;
	fuse_set_log_func(fuse_log_handler);
}

void afs_log_capture_fuse(bool on)
{
	capture = on;
	captured[0] = '\0';
	fuse_set_log_func(fuse_log_handler);
}

const char *afs_log_captured(void)
{
	return captured[0] ? captured : "failed";
}

void afs_log(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (use_syslog) {
		vsyslog(prio, fmt, ap);
	} else {
		/* one fprintf per message keeps lines from threads whole */
		char line[1024];

		vsnprintf(line, sizeof(line), fmt, ap);
		fprintf(stderr, "aheadfs: %s\n", line);
	}
	va_end(ap);
}
