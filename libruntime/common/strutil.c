/* strutil.c - small string helpers the library and the guest agent share.  */
#include <stdarg.h>
#include <stdio.h>

#include "common/strutil.h"

char *
rt_strdup_printf (const char *fmt, ...)
{
  va_list ap;
  char *s = NULL;

  va_start (ap, fmt);
  if (vasprintf (&s, fmt, ap) < 0)
    s = NULL;
  va_end (ap);
  return s;
}

bool
rt_env_name_valid (const char *s, size_t len)
{
  if (len == 0 || !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
    return false;
  for (size_t i = 1; i < len; i++)
    if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
      return false;
  return true;
}
