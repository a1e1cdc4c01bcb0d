/* slurp.h - a whole text file in memory, for the unit tests that hold a
 * document to the code (test_schema.c, test_opts_doc.c).  Include after
 * the C library's headers. */
#ifndef AFS_TEST_SLURP_H
#define AFS_TEST_SLURP_H

#include <stdio.h>

/* @path's text, NUL-terminated (free() it), or NULL if it cannot be read. */
static inline char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len = 0;
	FILE *m;
	int c;

	if (!f)
		return NULL;
	m = open_memstream(&text, &len);
	while ((c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(m);
	fclose(f);
	return text;
}

#endif /* AFS_TEST_SLURP_H */
