/* egress.c - parsing the sandbox network rules and deciding destinations.  */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>

#include "net/egress.h"
#include "net/refused.h"
#include "net/sockaddr.h"
#include "common/util.h"

/* Longer input cannot be any valid entry; it is refused before parsing.  */
#define ENTRY_MAX_LEN 300
#define NAME_MAX_LEN 253
#define LABEL_MAX_LEN 63

/* Addresses are compared widened to IPv6, IPv4 as ::ffff:a.b.c.d, so one
   prefix comparison serves both families and a mapped address can never
   slip past a rule written for its IPv4 form.  */
static const uint8_t v4mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static void
widen_v4 (const void *v4, uint8_t out[16])
{
  memcpy (out, v4mapped_prefix, 12);
  memcpy (out + 12, v4, 4);
}

/* The address of a sockaddr, widened; false for other families.  */
static bool
sockaddr_ip (const struct sockaddr *sa, uint8_t out[16])
{
  if (sa->sa_family == AF_INET)
    {
      const struct sockaddr_in *in = (const struct sockaddr_in *) sa;
      widen_v4 (&in->sin_addr, out);
      return true;
    }
  if (sa->sa_family == AF_INET6)
    {
      const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) sa;
      memcpy (out, &in6->sin6_addr, 16);
      return true;
    }
  return false;
}

bool
rt_egress_address_refused (const struct sockaddr *addr)
{
  uint8_t a[16];

  if (addr == NULL)
    return false;
  if (!sockaddr_ip (addr, a))
    return true;
  return rt_refused_ip (a);
}

/* An "addr" or "addr/len" entry as the normalizer writes it, widened.
   false when the entry is a name.  */
static bool
parse_ip_entry (const char *s, uint8_t net[16], int *plen)
{
  char buf[INET6_ADDRSTRLEN + 1];
  const char *slash = strchr (s, '/');
  size_t n = slash ? (size_t) (slash - s) : strlen (s);
  uint8_t v4[4];
  int max, len = 0;

  if (n >= sizeof (buf))
    return false;
  memcpy (buf, s, n);
  buf[n] = '\0';
  if (inet_pton (AF_INET, buf, v4) == 1)
    {
      widen_v4 (v4, net);
      max = 32;
    }
  else if (inet_pton (AF_INET6, buf, net) == 1)
    max = 128;
  else
    return false;
  if (slash == NULL)
    len = max;
  else
    {
      const char *p = slash + 1;
      if (*p == '\0' || strlen (p) > 3)
        return false;
      for (; *p; p++)
        {
          if (*p < '0' || *p > '9')
            return false;
          len = len * 10 + (*p - '0');
        }
      if (len > max)
        return false;
    }
  *plen = len + (128 - max);
  return true;
}

/* Printable, bounded text of user input for an error message: one line.  */
static void
shown (const char *in, char out[72])
{
  size_t i;

  for (i = 0; in[i] && i < 64; i++)
    out[i] = (in[i] >= 0x20 && in[i] < 0x7f) ? in[i] : '?';
  if (in[i])
    {
      memcpy (out + i, "...", 3);
      i += 3;
    }
  out[i] = '\0';
}

static int
bad_entry (rt_error **err, const char *in, const char *why)
{
  char s[72];

  shown (in, s);
  return rt_error_set (err, EINVAL, "invalid_request", "invalid host '%s' in the rules: %s", s, why);
}

static int
normalize_ip (const char *in, char **out, rt_error **err)
{
  char addr[INET6_ADDRSTRLEN + 3], text[INET6_ADDRSTRLEN];
  const char *slash = strchr (in, '/');
  const char *a = in;
  size_t n = slash ? (size_t) (slash - in) : strlen (in);
  uint8_t bin[16], masked[16];
  int family, max, len = -1;

  /* "[::1]" as in URLs: the brackets are not part of the address.  */
  if (in[0] == '[')
    {
      if (n < 2 || in[n - 1] != ']')
        return bad_entry (err, in, "unbalanced '['");
      a++;
      n -= 2;
    }
  if (n >= sizeof (addr))
    return bad_entry (err, in, "not a valid IP address");
  memcpy (addr, a, n);
  addr[n] = '\0';
  family = strchr (addr, ':') ? AF_INET6 : AF_INET;
  if (in[0] == '[' && family != AF_INET6)
    return bad_entry (err, in, "only IPv6 addresses go in brackets");
  max = family == AF_INET6 ? 128 : 32;
  if (inet_pton (family, addr, bin) != 1)
    {
      const char *colon = strchr (addr, ':');
      if (colon && strchr (colon + 1, ':') == NULL)
        return bad_entry (err, in, "an entry has no port; write the host alone");
    }
  if (inet_pton (family, addr, bin) != 1)
    return bad_entry (err, in, family == AF_INET6 ? "not a valid IPv6 address" : "not a valid IPv4 address");

  if (slash)
    {
      const char *p = slash + 1;
      len = 0;
      if (*p == '\0' || strlen (p) > 3)
        return bad_entry (err, in, family == AF_INET6 ? "the prefix length must be 0 to 128"
                                                      : "the prefix length must be 0 to 32");
      for (; *p; p++)
        {
          if (*p < '0' || *p > '9')
            return bad_entry (err, in, "the prefix length must be a number");
          len = len * 10 + (*p - '0');
        }
      if (len > max)
        return bad_entry (err, in, family == AF_INET6 ? "the prefix length must be 0 to 128"
                                                      : "the prefix length must be 0 to 32");
      /* Host bits set usually mean a typo in the prefix length: name the
         network this would be rather than guess.  */
      memset (masked, 0, sizeof (masked));
      memcpy (masked, bin, len / 8);
      if (len % 8)
        masked[len / 8] = bin[len / 8] & (uint8_t) (0xff << (8 - len % 8));
      if (memcmp (masked, bin, max / 8) != 0)
        {
          char why[128];
          inet_ntop (family, masked, text, sizeof (text));
          snprintf (why, sizeof (why), "host bits are set; the network is %s/%d", text, len);
          return bad_entry (err, in, why);
        }
    }

  inet_ntop (family, bin, text, sizeof (text));
  *out = len >= 0 ? rt_strdup_printf ("%s/%d", text, len) : strdup (text);
  if (*out == NULL)
    return rt_error_oom (err);
  return 0;
}

/* Checks a lowercased host name without a trailing dot; NULL when good,
   else why not.  */
static const char *
host_invalid (const char *s)
{
  size_t n = strlen (s), label = 0;
  const char *last;
  bool all_digits = true;
  struct in_addr ignored;

  if (n == 0)
    return "empty host name";
  if (n > NAME_MAX_LEN)
    return "longer than 253 characters";
  for (size_t i = 0; i <= n; i++)
    {
      char c = s[i];
      if (c == '.' || c == '\0')
        {
          if (label == 0)
            return "empty label";
          if (s[i - 1] == '-')
            return "a label cannot end with '-'";
          label = 0;
          continue;
        }
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
        return "only letters, digits, '-' and '.' are allowed";
      if (c == '-' && label == 0)
        return "a label cannot start with '-'";
      if (++label > LABEL_MAX_LEN)
        return "a label is longer than 63 characters";
    }
  /* Resolvers read "127.1" or "0x7f000001" as addresses (inet_aton):
     such a name would dodge every rule about addresses.  No top-level
     domain is all digits, so nothing real is lost.  */
  last = strrchr (s, '.');
  last = last ? last + 1 : s;
  for (const char *p = last; *p; p++)
    if (*p < '0' || *p > '9')
      all_digits = false;
  if (strspn (s, "0123456789.") == n)
    return "not a valid IPv4 address";
  if (inet_aton (s, &ignored))
    return "a numeric address; write it as a.b.c.d";
  if (all_digits)
    return "the last label cannot be all digits";
  return NULL;
}

int
rt_egress_entry_normalize (const char *in, char **out, rt_error **err)
{
  cleanup_free char *s = NULL;
  const char *host, *why;
  size_t n;
  uint8_t v4[4];

  if (in == NULL || *in == '\0')
    return bad_entry (err, "", "empty entry");
  n = strlen (in);
  if (n > ENTRY_MAX_LEN)
    return bad_entry (err, in, "too long");
  if (in[0] == '[' || strchr (in, ':') || strchr (in, '/') || inet_pton (AF_INET, in, v4) == 1)
    return normalize_ip (in, out, err);

  s = strdup (in);
  if (s == NULL)
    return rt_error_oom (err);
  for (char *p = s; *p; p++)
    if (*p >= 'A' && *p <= 'Z')
      *p += 'a' - 'A';
  if (n > 1 && s[n - 1] == '.')
    s[n - 1] = '\0';
  host = s;
  if (strncmp (s, "*.", 2) == 0)
    host = s + 2;
  else if (strchr (s, '*'))
    return bad_entry (err, in, "'*' is only allowed as '*.domain'");
  why = host_invalid (host);
  if (why)
    return bad_entry (err, in, why);
  *out = steal_pointer (&s);
  return 0;
}

static void
strv_free (char **v)
{
  cleanup_strvp (&v);
}

static size_t
strv_len (char *const *v)
{
  size_t n = 0;

  while (v && v[n])
    n++;
  return n;
}

static char **
strv_dup (char *const *v)
{
  size_t n = strv_len (v);
  cleanup_strv char **copy = NULL;

  if (n == 0)
    return NULL;
  copy = calloc (n + 1, sizeof (char *));
  if (copy == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++)
    if ((copy[i] = strdup (v[i])) == NULL)
      return NULL;
  return steal_pointer (&copy);
}

void
rt_egress_rules_clear (struct rt_egress_rules *r)
{
  strv_free (r->allow);
  strv_free (r->deny);
  r->allow = r->deny = NULL;
  r->internet = true;
  r->trial = false;
}

int
rt_egress_rules_copy (const struct rt_egress_rules *src, struct rt_egress_rules *dst, rt_error **err)
{
  cleanup_strv char **allow = strv_dup (src->allow);
  cleanup_strv char **deny = strv_dup (src->deny);

  if ((allow == NULL && strv_len (src->allow) > 0) || (deny == NULL && strv_len (src->deny) > 0))
    return rt_error_oom (err);
  dst->internet = src->internet;
  dst->trial = src->trial;
  dst->allow = steal_pointer (&allow);
  dst->deny = steal_pointer (&deny);
  return 0;
}

static int
list_from_json (json_object *obj, const char *key, char ***out, rt_error **err)
{
  cleanup_strv char **list = NULL;
  json_object *a;
  size_t n;

  *out = NULL;
  if (!json_object_object_get_ex (obj, key, &a) || a == NULL)
    return 0;
  if (!json_object_is_type (a, json_type_array))
    return rt_error_set (err, EINVAL, "invalid_request", "network rules: \"%s\" must be an array of strings", key);
  n = json_object_array_length (a);
  if (n > RT_EGRESS_MAX_ENTRIES)
    return rt_error_set (err, EINVAL, "invalid_request", "network rules: at most %d \"%s\" entries (%zu given)",
                         RT_EGRESS_MAX_ENTRIES, key, n);
  if (n == 0)
    return 0;
  list = calloc (n + 1, sizeof (char *));
  if (list == NULL)
    return rt_error_oom (err);
  for (size_t i = 0; i < n; i++)
    {
      json_object *e = json_object_array_get_idx (a, i);
      const char *s;
      int ret;

      if (!json_object_is_type (e, json_type_string))
        return rt_error_set (err, EINVAL, "invalid_request", "network rules: \"%s\" must be an array of strings",
                             key);
      s = json_object_get_string (e);
      /* JSON strings may hold NUL: the entry would not be what it looks.  */
      if (strlen (s) != (size_t) json_object_get_string_len (e))
        return bad_entry (err, s, "contains a NUL character");
      ret = rt_egress_entry_normalize (s, &list[i], err);
      if (ret < 0)
        return ret;
    }
  *out = steal_pointer (&list);
  return 0;
}

int
rt_egress_rules_from_json (struct json_object *obj, struct rt_egress_rules *r, rt_error **err)
{
  cleanup_strv char **allow = NULL;
  cleanup_strv char **deny = NULL;
  json_object *v;
  bool internet = true;
  int ret;

  if (obj != NULL)
    {
      if (!json_object_is_type (obj, json_type_object))
        return rt_error_set (err, EINVAL, "invalid_request", "network rules must be a JSON object");
      json_object_object_foreach (obj, key, val)
        {
          (void) val;
          if (strcmp (key, "internet") != 0 && strcmp (key, "allow") != 0 && strcmp (key, "deny") != 0)
            {
              char s[72];
              shown (key, s);
              return rt_error_set (err, EINVAL, "invalid_request",
                                   "network rules: unknown key \"%s\" (expected internet, allow, deny)", s);
            }
        }
      if (json_object_object_get_ex (obj, "internet", &v))
        {
          if (!json_object_is_type (v, json_type_boolean))
            return rt_error_set (err, EINVAL, "invalid_request", "network rules: \"internet\" must be true or false");
          internet = json_object_get_boolean (v);
        }
      ret = list_from_json (obj, "allow", &allow, err);
      if (ret < 0)
        return ret;
      ret = list_from_json (obj, "deny", &deny, err);
      if (ret < 0)
        return ret;
    }
  r->internet = internet;
  r->trial = false;
  r->allow = steal_pointer (&allow);
  r->deny = steal_pointer (&deny);
  return 0;
}

static json_object *
list_to_json (char *const *v)
{
  json_object *a = json_object_new_array ();

  if (a == NULL)
    return NULL;
  for (size_t i = 0; v && v[i]; i++)
    {
      json_object *s = json_object_new_string (v[i]);
      if (s == NULL || json_object_array_add (a, s) < 0)
        {
          json_object_put (s);
          json_object_put (a);
          return NULL;
        }
    }
  return a;
}

struct json_object *
rt_egress_rules_to_json (const struct rt_egress_rules *r)
{
  cleanup_json json_object *o = json_object_new_object ();
  json_object *allow, *deny;

  if (o == NULL || json_object_object_add (o, "internet", json_object_new_boolean (r->internet)) < 0)
    return NULL;
  allow = list_to_json (r->allow);
  if (allow == NULL || json_object_object_add (o, "allow", allow) < 0)
    {
      json_object_put (allow);
      return NULL;
    }
  deny = list_to_json (r->deny);
  if (deny == NULL || json_object_object_add (o, "deny", deny) < 0)
    {
      json_object_put (deny);
      return NULL;
    }
  return steal_pointer (&o);
}

const char *
rt_egress_verdict_str (enum rt_egress_verdict v)
{
  switch (v)
    {
    case RT_EGRESS_ALLOWED:
      return "allowed";
    case RT_EGRESS_INTERNET_OFF:
      return "internet_off";
    case RT_EGRESS_DENIED:
      return "denied";
    case RT_EGRESS_NOT_ALLOWED:
      return "not_allowed";
    case RT_EGRESS_PRIVATE:
      return "private_address";
    case RT_EGRESS_BLOCKED_PORT:
      return "blocked_port";
    case RT_EGRESS_TRIAL_PORT:
      return "trial_port";
    case RT_EGRESS_NAME_MISMATCH:
      return "name_mismatch";
    }
  return "unknown";
}

/* A name as the guest sent it, after one trailing dot is dropped.  Looser
   than entries ('_' and uppercase occur in real queries); anything else
   cannot be judged.  */
static bool
name_well_formed (const char *s, size_t n)
{
  size_t label = 0;

  if (n == 0 || n > NAME_MAX_LEN)
    return false;
  for (size_t i = 0; i <= n; i++)
    {
      char c = i < n ? s[i] : '.';
      if (c == '.')
        {
          if (label == 0)
            return false;
          label = 0;
          continue;
        }
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
        return false;
      if (++label > LABEL_MAX_LEN)
        return false;
    }
  return true;
}

/* Does @name (@n bytes) match the name or "*.domain" entry @e?  */
static bool
name_matches (const char *name, size_t n, const char *e)
{
  size_t en;

  if (strncmp (e, "*.", 2) == 0)
    {
      e += 1; /* keep the dot: "badexample.com" must not match */
      en = strlen (e);
      return n > en && strncasecmp (name + n - en, e, en) == 0;
    }
  en = strlen (e);
  if (en > 0 && e[en - 1] == '.')
    en--;
  return n == en && strncasecmp (name, e, n) == 0;
}

struct target
{
  const char *name;  /* NULL when none or when it was an address */
  size_t name_len;
  bool has_ip[2];    /* [0] the dialled address, [1] the name as a literal */
  uint8_t ip[2][16];
};

static bool
entry_matches (const char *e, const struct target *t)
{
  uint8_t net[16];
  int plen;

  if (parse_ip_entry (e, net, &plen))
    return (t->has_ip[0] && rt_addr_prefix_match (t->ip[0], net, plen))
           || (t->has_ip[1] && rt_addr_prefix_match (t->ip[1], net, plen));
  return t->name && name_matches (t->name, t->name_len, e);
}

/* A name that is an IP literal: "1.2.3.4", "::1", "[::1]", and the forms
   inet_aton takes ("127.1", "0x7f000001") since resolvers take them too.  */
static bool
name_literal (const char *s, size_t n, uint8_t out[16])
{
  char buf[INET6_ADDRSTRLEN + 2];
  struct in_addr v4;

  if (n >= 2 && s[0] == '[' && s[n - 1] == ']')
    {
      s++;
      n -= 2;
    }
  if (n == 0 || n >= sizeof (buf))
    return false;
  memcpy (buf, s, n);
  buf[n] = '\0';
  if (inet_pton (AF_INET6, buf, out) == 1)
    return true;
  if (strspn (buf, "0123456789abcdefxABCDEFX.") == n && inet_aton (buf, &v4))
    {
      widen_v4 (&v4, out);
      return true;
    }
  return false;
}

enum rt_egress_verdict
rt_egress_decide (const struct rt_egress_rules *r, const char *name, const struct sockaddr *addr, int port)
{
  struct target t = { 0 };
  bool name_bad = false, allow_has_ip = false;

  if (!r->internet)
    return RT_EGRESS_INTERNET_OFF;
  if (port != 0)
    {
      if (port < 0 || port > 65535 || port == 25 || port == 465 || port == 587)
        return RT_EGRESS_BLOCKED_PORT;
      if (r->trial && port != 80 && port != 443)
        return RT_EGRESS_TRIAL_PORT;
    }

  if (addr)
    {
      if (!sockaddr_ip (addr, t.ip[0]))
        return RT_EGRESS_PRIVATE;
      t.has_ip[0] = true;
    }
  if (name)
    {
      size_t n = strlen (name);
      if (n > 1 && name[n - 1] == '.')
        n--;
      if (name_literal (name, n, t.ip[1]))
        t.has_ip[1] = true;
      else if (name_well_formed (name, n))
        {
          t.name = name;
          t.name_len = n;
        }
      else
        name_bad = true;
    }
  /* The literal counts as the destination only when nothing else is known;
     but a refused or denied one refuses either way.  */
  for (int i = 0; i < 2; i++)
    if (t.has_ip[i] && rt_refused_ip (t.ip[i]))
      return RT_EGRESS_PRIVATE;
  if (name_bad)
    return RT_EGRESS_NOT_ALLOWED;

  for (size_t i = 0; r->deny && r->deny[i]; i++)
    if (entry_matches (r->deny[i], &t))
      return RT_EGRESS_DENIED;

  if (r->allow == NULL || r->allow[0] == NULL)
    return RT_EGRESS_ALLOWED;
  if (t.has_ip[0])
    t.has_ip[1] = false;
  for (size_t i = 0; r->allow[i]; i++)
    {
      uint8_t net[16];
      int plen;

      if (entry_matches (r->allow[i], &t))
        return RT_EGRESS_ALLOWED;
      if (parse_ip_entry (r->allow[i], net, &plen))
        allow_has_ip = true;
    }
  if (t.name && !t.has_ip[0] && allow_has_ip)
    return RT_EGRESS_ALLOWED;
  return RT_EGRESS_NOT_ALLOWED;
}

/* Are @a and @b the same host name, case and one trailing dot aside?  */
static bool
same_name (const char *a, const char *b)
{
  size_t an = strlen (a), bn = strlen (b);

  if (an > 1 && a[an - 1] == '.')
    an--;
  if (bn > 1 && b[bn - 1] == '.')
    bn--;
  return an == bn && strncasecmp (a, b, an) == 0;
}

enum rt_egress_verdict
rt_egress_name_agrees (const struct rt_egress_rules *r, const char *sent, const char *const *known,
                       const struct sockaddr *addr, int port)
{
  uint8_t lit[16], ip[16];
  size_t n;

  if (sent == NULL)
    return RT_EGRESS_ALLOWED;
  n = strlen (sent);
  if (n > 1 && sent[n - 1] == '.')
    n--;
  /* "Host: 203.0.113.5" to that very address says nothing more; to
     another one it asks the server for a site elsewhere.  */
  if (name_literal (sent, n, lit))
    return addr && sockaddr_ip (addr, ip) && memcmp (ip, lit, 16) == 0 ? RT_EGRESS_ALLOWED
                                                                      : RT_EGRESS_NAME_MISMATCH;
  if (known && known[0])
    {
      bool agrees = false;
      for (size_t i = 0; known[i] && !agrees; i++)
        agrees = same_name (sent, known[i]);
      if (!agrees)
        return RT_EGRESS_NAME_MISMATCH;
    }
  return rt_egress_decide (r, sent, addr, port);
}

bool
rt_egress_names_match (char *const *entries, const char *name)
{
  uint8_t net[16];
  size_t n;
  int plen;

  if (name == NULL)
    return false;
  n = strlen (name);
  if (n > 1 && name[n - 1] == '.')
    n--;
  if (!name_well_formed (name, n) || name_literal (name, n, net))
    return false;
  for (size_t i = 0; entries && entries[i]; i++)
    if (!parse_ip_entry (entries[i], net, &plen) && name_matches (name, n, entries[i]))
      return true;
  return false;
}
