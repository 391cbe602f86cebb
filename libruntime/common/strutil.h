/* strutil.h - small string helpers the library and the guest agent share.  */
#ifndef RT_STRUTIL_H
#define RT_STRUTIL_H

#include <stdbool.h>
#include <stddef.h>

#define RT_PRINTF(a, b) __attribute__ ((format (printf, a, b)))

/* A new string, or NULL when out of memory.  */
char *rt_strdup_printf (const char *fmt, ...) RT_PRINTF (1, 2);
/* An environment variable name: [A-Za-z_][A-Za-z0-9_]* (POSIX portable
   names), whatever the locale.  Public too (include/runtime.h); declared
   here for the agent, which does not see that header.  */
bool rt_env_name_valid (const char *s, size_t len);

#endif
