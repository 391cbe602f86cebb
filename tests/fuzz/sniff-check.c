/* sniff-check.c - see sniff-check.h.  */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "net/sniff.h"
#include "sniff-check.h"

bool
sniff_name_sane (const char *s)
{
  size_t n, label = 0;

  if (s == NULL)
    return false;
  n = strlen (s);
  if (n == 0 || n > 253 || s[n - 1] == '.')
    return false;
  if (strchr (s, ':') != NULL)
    return strspn (s, "0123456789abcdef:.") == n;
  for (size_t i = 0; i < n; i++)
    {
      if (s[i] == '.')
        {
          if (label == 0)
            return false;
          label = 0;
        }
      else if ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_')
        label++;
      else
        return false;
    }
  return true;
}

static int
sniff_once (const unsigned char *buf, size_t len, char **name)
{
  unsigned char *copy = malloc (len ? len : 1);
  int ret;

  FUZZ_CHECK (copy != NULL);
  memcpy (copy, buf, len);
  *name = NULL;
  ret = rt_sniff_name (copy, len, name);
  free (copy);
  FUZZ_CHECK (ret == RT_SNIFF_UNREADABLE || ret == -1 || ret == 0 || ret == 1);
  /* Only what starts as a TLS handshake is refused for being unreadable.  */
  FUZZ_CHECK (ret != RT_SNIFF_UNREADABLE || buf[0] == 0x16);
  FUZZ_CHECK ((ret == 1) == (*name != NULL));
  FUZZ_CHECK (ret != 1 || sniff_name_sane (*name));
  return ret;
}

int
sniff_name_checked (const unsigned char *buf, size_t len, char **name)
{
  size_t cuts[3];
  int ret = sniff_once (buf, len, name);

  /* Three prefixes: the half, all but one byte, and one that depends on
     the content, so that the fuzzer can steer it.  */
  cuts[0] = len / 2;
  cuts[1] = len > 0 ? len - 1 : 0;
  cuts[2] = len > 0 ? (buf[len - 1] * 257u + len) % len : 0;
  for (size_t i = 0; i < 3; i++)
    {
      char *pname = NULL;
      int pret = sniff_once (buf, cuts[i], &pname);
      if (pret != -1)
        {
          FUZZ_CHECK (pret == ret);
          FUZZ_CHECK (pret != 1 || strcmp (pname, *name) == 0);
        }
      free (pname);
    }
  return ret;
}
