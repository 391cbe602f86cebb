/* strutil.h - small string helpers the library and the guest agent share.  */
#ifndef RT_STRUTIL_H
#define RT_STRUTIL_H

#include <stdbool.h>
#include <stddef.h>

#define RT_PRINTF(a, b) __attribute__ ((format (printf, a, b)))
/* PATH for the processes the library starts with an environment of its
   own (the monitor, QEMU): never the caller's.  */
#define RT_CLEAN_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* A new string, or NULL when out of memory.  */
char *rt_strdup_printf (const char *fmt, ...) RT_PRINTF (1, 2);
/* An environment variable name: [A-Za-z_][A-Za-z0-9_]* (POSIX portable
   names), whatever the locale.  Public too (include/runtime.h); declared
   here for the agent, which does not see that header.  */
bool rt_env_name_valid (const char *s, size_t len);
/* @text as a terminal may show it: control characters, C1 controls,
   bidirectional controls (U+061C, U+200E/F, U+202A..E, U+2066..9) and
   bytes that are not UTF-8 as \xHH (each byte), newlines and tabs kept only when
   @multiline.  A new string, or NULL when out of memory.  Public too.  */
char *rt_text_escape (const char *text, bool multiline);
/* @text on one line of at most @max bytes (@max >= 8), for an error: its
   lines joined by "; " (by a space after ':', ';', ',' or '.'), blank
   lines dropped, runs of spaces and tabs made one space, ends trimmed, and
   cut at a character's boundary with "…" when longer.  A new string, or
   NULL when out of memory.  */
char *rt_text_fold (const char *text, size_t max);

#endif
