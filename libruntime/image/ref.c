/* ref.c - container image references (ref.h).  The grammar is the
   distribution project's reference grammar:
     reference  := name [ ":" tag ] [ "@" digest ]
     name       := [ domain "/" ] path-component [ "/" path-component ]*
     domain     := host [ ":" port ] ; host a DNS name or "[" IPv6 "]"
     path-component := [a-z0-9]+ ( ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ )*
     tag        := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
   with Docker's normalisation on top (splitDockerDomain): the first part
   is a registry only if it has a "." or a ":", is "localhost", or has an
   upper-case letter.  */
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "common/util.h"
#include "image/oci.h"
#include "image/ref.h"

#define DOCKER_HUB "docker.io"

static bool
is_lower_alnum (char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool
is_alnum (char c)
{
  return is_lower_alnum (c) || (c >= 'A' && c <= 'Z');
}

static bool
is_hex (char c)
{
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* One path component, [s, s + n).  */
static bool
path_component_ok (const char *s, size_t n)
{
  size_t i = 0;

  if (n == 0 || !is_lower_alnum (s[0]) || !is_lower_alnum (s[n - 1]))
    return false;
  while (i < n)
    {
      if (is_lower_alnum (s[i]))
        {
          i++;
          continue;
        }
      /* A separator: ".", "_", "__" or a run of "-", between alnums.  */
      if (s[i] == '.' || s[i] == '_')
        i += s[i] == '_' && i + 1 < n && s[i + 1] == '_' ? 2 : 1;
      else if (s[i] == '-')
        while (i < n && s[i] == '-')
          i++;
      else
        return false;
      if (i >= n || !is_lower_alnum (s[i]))
        return false;
    }
  return true;
}

static bool
port_ok (const char *s, size_t n)
{
  if (n == 0 || n > 5)
    return false;
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return true;
}

/* A registry: "[v6]" or DNS labels joined by ".", then ":port" or not.  */
static bool
domain_ok (const char *s, size_t n)
{
  size_t i = 0, host_end;

  if (n == 0)
    return false;
  if (s[0] == '[')
    {
      const char *close = memchr (s, ']', n);

      if (close == NULL || close == s + 1)
        return false;
      for (const char *p = s + 1; p < close; p++)
        if (!is_hex (*p) && !(*p >= 'A' && *p <= 'F') && *p != ':')
          return false;
      host_end = (size_t) (close - s) + 1;
    }
  else
    {
      while (i < n && s[i] != ':')
        {
          size_t start = i;

          while (i < n && (is_alnum (s[i]) || s[i] == '-'))
            i++;
          if (i == start || s[start] == '-' || s[i - 1] == '-')
            return false;
          if (i < n && s[i] == '.')
            {
              i++;
              if (i >= n || s[i] == ':')
                return false;
            }
          else if (i < n && s[i] != ':')
            return false;
        }
      host_end = i;
    }
  if (host_end == n)
    return true;
  return s[host_end] == ':' && port_ok (s + host_end + 1, n - host_end - 1);
}

static bool
tag_ok (const char *s)
{
  size_t n = strlen (s);

  if (n == 0 || n > 128 || !(is_alnum (s[0]) || s[0] == '_'))
    return false;
  for (size_t i = 1; i < n; i++)
    if (!is_alnum (s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
      return false;
  return true;
}

void
rt_image_ref_clear (struct rt_image_ref *ref)
{
  free (ref->domain);
  free (ref->path);
  free (ref->tag);
  free (ref->digest);
  memset (ref, 0, sizeof *ref);
}

/* The reference is the caller's input, shown escaped (a terminal's
   controls, a bidi override) and cut.  */
static int
bad (rt_error **err, const char *s, const char *why)
{
  cleanup_free char *escaped = rt_text_escape (s, false);
  cleanup_free char *shown = escaped ? rt_text_fold (escaped, 200) : NULL;

  return rt_error_set (err, EINVAL, "invalid_request", "'%s' is not an image reference: %s", shown ? shown : "", why);
}

int
rt_image_ref_parse (const char *s, struct rt_image_ref *ref, rt_error **err)
{
  cleanup_free char *name = NULL;
  const char *at, *slash, *colon, *rest;
  size_t n;

  memset (ref, 0, sizeof *ref);
  if (s == NULL || *s == '\0')
    return rt_error_set (err, EINVAL, "invalid_request", "an image reference is needed, e.g. python:3.12-slim");
  n = strlen (s);
  if (n > RT_IMAGE_REF_MAX)
    return bad (err, s, "too long");
  for (size_t i = 0; i < n; i++)
    if ((unsigned char) s[i] <= ' ' || (unsigned char) s[i] >= 0x7f)
      return bad (err, s, "it may hold only printable ASCII without spaces");
  /* "sha256:<hex>" alone, or 64 hex digits, is an image id, not a name.  */
  if (n == 64 && strspn (s, "0123456789abcdef") == 64)
    return bad (err, s, "64 hexadecimal digits are an image id, not a repository name");

  at = strchr (s, '@');
  name = strndup (s, at ? (size_t) (at - s) : n);
  if (name == NULL)
    return rt_error_oom (err);
  if (at && !rt_oci_digest_valid (at + 1))
    return bad (err, s, "the digest must be sha256: and 64 lower-case hex digits (or sha512: and 128)");
  /* The tag: after the last ':' that follows the last '/'.  */
  slash = strrchr (name, '/');
  colon = strrchr (slash ? slash : name, ':');
  if (colon)
    {
      if (!tag_ok (colon + 1))
        return bad (err, s, "a tag is 1-128 of A-Z a-z 0-9 _ . - and does not start with . or -");
      ref->tag = strdup (colon + 1);
      name[colon - name] = '\0';
    }
  /* The registry, by Docker's rule.  */
  slash = strchr (name, '/');
  if (slash && (memchr (name, '.', (size_t) (slash - name)) || memchr (name, ':', (size_t) (slash - name))
                || ((size_t) (slash - name) == 9 && strncmp (name, "localhost", 9) == 0)
                || strcspn (name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") < (size_t) (slash - name)))
    {
      if (!domain_ok (name, (size_t) (slash - name)))
        goto bad_domain;
      ref->domain = strndup (name, (size_t) (slash - name));
      rest = slash + 1;
      if (ref->domain && strcmp (ref->domain, "index.docker.io") == 0)
        {
          free (ref->domain);
          ref->domain = strdup (DOCKER_HUB);
        }
    }
  else
    {
      ref->domain = strdup (DOCKER_HUB);
      rest = name;
    }
  if (ref->domain == NULL)
    goto oom;
  if (strcspn (rest, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen (rest))
    {
      rt_image_ref_clear (ref);
      return bad (err, s, "a repository name must be lower-case");
    }
  for (const char *p = rest;;)
    {
      const char *end = strchr (p, '/');
      size_t len = end ? (size_t) (end - p) : strlen (p);

      if (!path_component_ok (p, len))
        {
          rt_image_ref_clear (ref);
          return bad (err, s,
                      "each part of a repository name is a-z 0-9 joined by '.', '_', '__' or '-', between '/'");
        }
      if (end == NULL)
        break;
      p = end + 1;
    }
  ref->path = strcmp (ref->domain, DOCKER_HUB) == 0 && strchr (rest, '/') == NULL ? rt_strdup_printf ("library/%s", rest)
                                                                                  : strdup (rest);
  if (ref->path == NULL)
    goto oom;
  if (strlen (ref->domain) + 1 + strlen (ref->path) > RT_IMAGE_REF_NAME_MAX)
    {
      rt_image_ref_clear (ref);
      return bad (err, s, "a name is at most 255 characters");
    }
  if (at && (ref->digest = strdup (at + 1)) == NULL)
    goto oom;
  if (ref->tag == NULL && ref->digest == NULL && (ref->tag = strdup ("latest")) == NULL)
    goto oom;
  return 0;

bad_domain:
  rt_image_ref_clear (ref);
  return bad (err, s, "the registry must be a host name or [IPv6 address], with a port or not");
oom:
  rt_image_ref_clear (ref);
  return rt_error_oom (err);
}

char *
rt_image_ref_string (const struct rt_image_ref *ref)
{
  if (ref->digest)
    return rt_strdup_printf ("%s/%s@%s", ref->domain, ref->path, ref->digest);
  return rt_strdup_printf ("%s/%s:%s", ref->domain, ref->path, ref->tag);
}

const char *
rt_image_ref_api_host (const struct rt_image_ref *ref)
{
  return strcmp (ref->domain, DOCKER_HUB) == 0 ? "registry-1.docker.io" : ref->domain;
}

const char *
rt_image_ref_manifest_key (const struct rt_image_ref *ref)
{
  return ref->digest ? ref->digest : ref->tag;
}

bool
rt_image_ref_loopback (const struct rt_image_ref *ref)
{
  const char *d = ref->domain;
  size_t host = d[0] == '[' ? strcspn (d, "]") + 1 : strcspn (d, ":");

  if (host == 9 && strncmp (d, "localhost", 9) == 0)
    return true;
  if (host == 5 && strncmp (d, "[::1]", 5) == 0)
    return true;
  /* 127.0.0.0/8 written as a dotted quad, each part 0-255.  */
  if (strncmp (d, "127.", 4) == 0)
    {
      int parts = 0, digits = 0, value = 0;

      for (size_t i = 0; i <= host; i++)
        if (i < host && d[i] >= '0' && d[i] <= '9')
          {
            value = value * 10 + (d[i] - '0');
            if (++digits > 3 || value > 255)
              return false;
          }
        else if ((i == host || d[i] == '.') && digits > 0)
          {
            parts++;
            digits = value = 0;
          }
        else
          return false;
      return parts == 4;
    }
  return false;
}
