/* test-egress.c - the network rules: which entries are accepted and how
   they are written back, and the decision for every kind of destination.
   A mistake here opens the host's network to untrusted code.  */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "net/egress.h"
#include "tap.h"
#include "common/util.h"

static void
norm_ok (const char *in, const char *want)
{
  char *out = NULL;
  rt_error *err = NULL;
  int ret = rt_egress_entry_normalize (in, &out, &err);

  ok (ret == 0 && out && strcmp (out, want) == 0, "'%.70s' normalizes to '%.70s' (got '%.70s'%s%s)", in, want,
      out ? out : "(null)", err ? ": " : "", err ? err->msg : "");
  free (out);
  rt_error_free (err);
}

static void
norm_bad (const char *in, const char *msg_part)
{
  char *out = NULL;
  rt_error *err = NULL;
  int ret = rt_egress_entry_normalize (in, &out, &err);

  /* The message shows the input made printable; TAP needs one line.  */
  ok (ret < 0 && out == NULL && err && strcmp (err->code, "invalid_request") == 0
          && strstr (err->msg, msg_part) != NULL,
      "refused: %s", err ? err->msg : in);
  free (out);
  rt_error_free (err);
}

static struct sockaddr_storage sa_buf;

/* A sockaddr for a literal: AF_INET6 when it holds ':'.  */
static const struct sockaddr *
sa (const char *ip)
{
  memset (&sa_buf, 0, sizeof (sa_buf));
  if (strchr (ip, ':'))
    {
      struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &sa_buf;
      s6->sin6_family = AF_INET6;
      if (inet_pton (AF_INET6, ip, &s6->sin6_addr) != 1)
        abort ();
    }
  else
    {
      struct sockaddr_in *s4 = (struct sockaddr_in *) &sa_buf;
      s4->sin_family = AF_INET;
      if (inet_pton (AF_INET, ip, &s4->sin_addr) != 1)
        abort ();
    }
  return (const struct sockaddr *) &sa_buf;
}

static struct rt_egress_rules
rules (const char *json)
{
  struct rt_egress_rules r = { 0 };
  json_object *o = json_tokener_parse (json);
  rt_error *err = NULL;

  if (o == NULL || rt_egress_rules_from_json (o, &r, &err) < 0)
    {
      printf ("# bad test rules %s: %s\n", json, err ? err->msg : "parse");
      abort ();
    }
  json_object_put (o);
  return r;
}

static int
from_json_fails (const char *json)
{
  struct rt_egress_rules r = { .internet = true };
  json_object *o = json_tokener_parse (json);
  rt_error *err = NULL;
  int ret = rt_egress_rules_from_json (o, &r, &err);
  int fails = ret < 0 && err && strcmp (err->code, "invalid_request") == 0 && r.allow == NULL && r.deny == NULL;

  json_object_put (o);
  rt_error_free (err);
  return fails;
}

#define DECIDE(r, name, ip, port, want)                                                                                \
  do                                                                                                                   \
    {                                                                                                                  \
      enum rt_egress_verdict v_ = rt_egress_decide (&(r), name, (ip) ? sa (ip) : NULL, port);                        \
      ok (v_ == (want), "%s name=%s addr=%s port=%d: %s", #r, (name) ? (name) : "-", (ip) ? (ip) : "-", port,        \
          rt_egress_verdict_str (v_));                                                                                 \
    }                                                                                                                  \
  while (0)

/* rt_egress_name_agrees for a connection to @ip:443 whose address was
   resolved for the names in @known (a NULL-terminated list).  */
#define AGREES(r, sent, known, ip, want)                                                                               \
  do                                                                                                                   \
    {                                                                                                                  \
      const char *const *k_ = (known);                                                                                 \
      enum rt_egress_verdict v_ = rt_egress_name_agrees (&(r), sent, k_, sa (ip), 443);                                \
      ok (v_ == (want), "%s: %s sent to %s known for %s: %s", #r, (sent) ? (sent) : "no name", ip,                    \
          k_ && k_[0] ? k_[0] : "nothing", rt_egress_verdict_str (v_));                                                \
    }                                                                                                                  \
  while (0)

/* Names that must agree with the address a connection was dialled to:
   the CDN case, where one address serves many sites and the SNI or Host
   picks one.  */
static void
test_names_agree (void)
{
  struct rt_egress_rules one = rules ("{\"allow\":[\"cdn.example.com\"]}");
  struct rt_egress_rules two = rules ("{\"allow\":[\"cdn.example.com\",\"other.example.com\"]}");
  struct rt_egress_rules wild = rules ("{\"allow\":[\"*.example.com\"],\"deny\":[\"bad.example.com\"]}");
  struct rt_egress_rules open = rules ("{\"deny\":[\"evil.net\"]}");
  struct rt_egress_rules cidr = rules ("{\"allow\":[\"203.0.113.0/24\"]}");
  const char *cdn[] = { "cdn.example.com", NULL };
  const char *both[] = { "other.example.com", "cdn.example.com", NULL };
  const char *bad[] = { "bad.example.com", NULL };
  const char *mixed_case[] = { "CDN.Example.COM.", NULL };
  const char *none[] = { NULL };

  /* The hole: an allowed name's address, another site named in it.  */
  AGREES (one, "evil.net", cdn, "203.0.113.5", RT_EGRESS_NAME_MISMATCH);
  AGREES (one, "other.example.com", cdn, "203.0.113.5", RT_EGRESS_NAME_MISMATCH);
  /* Allowed, but the guest never had this address for it.  */
  AGREES (two, "other.example.com", cdn, "203.0.113.5", RT_EGRESS_NAME_MISMATCH);
  AGREES (wild, "x.example.com", cdn, "203.0.113.5", RT_EGRESS_NAME_MISMATCH);
  AGREES (open, "anything.org", cdn, "203.0.113.5", RT_EGRESS_NAME_MISMATCH);
  /* The name itself, whatever its case or trailing dot.  */
  AGREES (one, "cdn.example.com", cdn, "203.0.113.5", RT_EGRESS_ALLOWED);
  AGREES (one, "CDN.example.com.", cdn, "203.0.113.5", RT_EGRESS_ALLOWED);
  AGREES (one, "cdn.example.com", mixed_case, "203.0.113.5", RT_EGRESS_ALLOWED);
  AGREES (one, "cdn.example.com..", cdn, "203.0.113.5", RT_EGRESS_NAME_MISMATCH);
  AGREES (one, "cdn.example.co", cdn, "203.0.113.5", RT_EGRESS_NAME_MISMATCH);
  AGREES (one, "xcdn.example.com", cdn, "203.0.113.5", RT_EGRESS_NAME_MISMATCH);
  /* Another name resolved to the same address: allowed only while the
     rules allow it.  */
  AGREES (two, "other.example.com", both, "203.0.113.5", RT_EGRESS_ALLOWED);
  AGREES (one, "other.example.com", both, "203.0.113.5", RT_EGRESS_NOT_ALLOWED);
  AGREES (one, "cdn.example.com", both, "203.0.113.5", RT_EGRESS_ALLOWED);
  /* Denied since the answer was given.  */
  AGREES (wild, "bad.example.com", bad, "203.0.113.5", RT_EGRESS_DENIED);
  /* No name: the address and its names were judged when dialled.  */
  AGREES (one, NULL, cdn, "203.0.113.5", RT_EGRESS_ALLOWED);
  /* IP literals: the address itself only.  */
  AGREES (one, "203.0.113.5", cdn, "203.0.113.5", RT_EGRESS_ALLOWED);
  AGREES (one, "203.0.113.6", cdn, "203.0.113.5", RT_EGRESS_NAME_MISMATCH);
  AGREES (one, "127.0.0.1", cdn, "203.0.113.5", RT_EGRESS_NAME_MISMATCH);
  AGREES (one, "0xcb007105", cdn, "203.0.113.5", RT_EGRESS_ALLOWED);
  AGREES (one, "[::ffff:203.0.113.5]", cdn, "203.0.113.5", RT_EGRESS_ALLOWED);
  /* An address not learned from a name: the name is judged at it.  */
  AGREES (one, "cdn.example.com", none, "203.0.113.5", RT_EGRESS_ALLOWED);
  AGREES (one, "evil.net", none, "203.0.113.5", RT_EGRESS_NOT_ALLOWED);
  AGREES (one, "evil.net", NULL, "203.0.113.5", RT_EGRESS_NOT_ALLOWED);
  AGREES (cidr, "anything.org", none, "203.0.113.5", RT_EGRESS_ALLOWED);
  AGREES (open, "evil.net", none, "203.0.113.5", RT_EGRESS_DENIED);
  /* A name that cannot be judged.  */
  AGREES (one, "cdn.example.com/x", cdn, "203.0.113.5", RT_EGRESS_NAME_MISMATCH);
  ok (strcmp (rt_egress_verdict_str (RT_EGRESS_NAME_MISMATCH), "name_mismatch") == 0, "name_mismatch is its string");
  rt_egress_rules_clear (&one);
  rt_egress_rules_clear (&two);
  rt_egress_rules_clear (&wild);
  rt_egress_rules_clear (&open);
  rt_egress_rules_clear (&cidr);
}

int
main (void)
{
  /* Normalization: what is accepted, and the canonical text.  */
  norm_ok ("example.com", "example.com");
  norm_ok ("API.Example.COM", "api.example.com");
  norm_ok ("example.com.", "example.com");
  norm_ok ("*.Example.com.", "*.example.com");
  norm_ok ("localhost", "localhost");
  norm_ok ("xn--bcher-kva.example", "xn--bcher-kva.example");
  norm_ok ("a-b.c0.io", "a-b.c0.io");
  norm_ok ("1.2.3.4", "1.2.3.4");
  norm_ok ("10.0.0.0/8", "10.0.0.0/8");
  norm_ok ("0.0.0.0/0", "0.0.0.0/0");
  norm_ok ("1.2.3.4/32", "1.2.3.4/32");
  norm_ok ("2001:DB8:0:0::1", "2001:db8::1");
  norm_ok ("[2001:db8::1]", "2001:db8::1");
  norm_ok ("2001:db8::/32", "2001:db8::/32");
  norm_ok ("::ffff:1.2.3.4", "::ffff:1.2.3.4");

  norm_bad ("", "empty");
  norm_bad ("x_y", "invalid host 'x_y' in the rules: only letters");
  norm_bad ("exa mple.com", "only letters");
  norm_bad ("-a.com", "start with '-'");
  norm_bad ("a-.com", "end with '-'");
  norm_bad ("a..com", "empty label");
  norm_bad (".com", "empty label");
  norm_bad ("example.com..", "empty label");
  norm_bad ("*", "'*' is only allowed");
  norm_bad ("*example.com", "'*' is only allowed");
  norm_bad ("a.*.example.com", "'*' is only allowed");
  norm_bad ("*.*.example.com", "only letters");
  norm_bad ("*.", "'*' is only allowed");
  norm_bad ("1.2.3.256", "not a valid IPv4 address");
  norm_bad ("127.1", "not a valid IPv4 address");
  norm_bad ("0x7f000001", "numeric address");
  norm_bad ("example.123", "all digits");
  norm_bad ("10.1.0.0/8", "host bits are set; the network is 10.0.0.0/8");
  norm_bad ("2001:db8::1/32", "the network is 2001:db8::/32");
  norm_bad ("10.0.0.0/33", "0 to 32");
  norm_bad ("::/129", "0 to 128");
  norm_bad ("10.0.0.0/", "0 to 32");
  norm_bad ("10.0.0.0/8x", "must be a number");
  norm_bad ("example.com/8", "not a valid IPv4");
  norm_bad ("fe80::1%eth0", "not a valid IPv6 address");
  norm_bad ("[1.2.3.4]", "brackets");
  norm_bad ("[::1", "unbalanced");
  norm_bad ("example.com:443", "no port");
  norm_bad ("1.2.3.4:80", "no port");
  {
    char name[300];
    memset (name, 'a', 64);
    strcpy (name + 64, ".com");
    norm_bad (name, "longer than 63");
    /* Four 63-character labels: 255 characters.  */
    memset (name, 'a', 255);
    name[63] = name[127] = name[191] = '.';
    name[255] = '\0';
    norm_bad (name, "longer than 253");
    name[253] = '\0'; /* the last label is 61 characters now */
    norm_ok (name, name);
  }
  norm_bad ("a\nb.com", "only letters");
  {
    rt_error *err = NULL;
    char *out = NULL;
    rt_egress_entry_normalize ("bad\n\x01name", &out, &err);
    ok (err && strchr (err->msg, '\n') == NULL && strchr (err->msg, '\x01') == NULL,
        "control characters of the input do not reach the message");
    rt_error_free (err);
  }

  /* JSON: round trip, defaults, bad shapes.  */
  {
    struct rt_egress_rules r = rules ("{\"internet\":true,\"allow\":[\"API.example.com\",\"10.0.0.0/8\"],"
                                      "\"deny\":[\"*.Bad.example.\"]}");
    struct rt_egress_rules c = { 0 };
    rt_error *err = NULL;
    json_object *o = rt_egress_rules_to_json (&r);
    const char *text = json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

    ok (strcmp (text, "{\"internet\":true,\"allow\":[\"api.example.com\",\"10.0.0.0/8\"],"
                      "\"deny\":[\"*.bad.example\"]}") == 0,
        "JSON round trip with normalized entries: %s", text);
    json_object_put (o);
    ok (rt_egress_rules_copy (&r, &c, &err) == 0 && c.internet && c.allow && c.allow[0] != r.allow[0]
            && strcmp (c.allow[1], "10.0.0.0/8") == 0 && c.allow[2] == NULL && strcmp (c.deny[0], "*.bad.example") == 0,
        "deep copy");
    rt_egress_rules_clear (&r);
    ok (r.allow == NULL && r.deny == NULL && r.internet && !r.trial, "clear");
    ok (strcmp (c.allow[0], "api.example.com") == 0, "the copy outlives the original");
    rt_egress_rules_clear (&c);
  }
  {
    struct rt_egress_rules r = rules ("{}");
    json_object *o = rt_egress_rules_to_json (&r);
    ok (r.internet && r.allow == NULL && r.deny == NULL, "{}: internet on, lists empty");
    ok (strcmp (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                "{\"internet\":true,\"allow\":[],\"deny\":[]}") == 0,
        "empty rules to JSON");
    json_object_put (o);
    r = rules ("{\"internet\":false}");
    ok (!r.internet, "internet false read");
    rt_egress_rules_clear (&r);
  }
  ok (from_json_fails ("[]"), "a non-object refused");
  ok (from_json_fails ("{\"internet\":\"yes\"}"), "a non-boolean internet refused");
  ok (from_json_fails ("{\"allow\":\"example.com\"}"), "a non-array allow refused");
  ok (from_json_fails ("{\"deny\":[1]}"), "a non-string entry refused");
  ok (from_json_fails ("{\"allow\":[\"ok.com\",\"x_y\"]}"), "a bad entry refused, nothing kept");
  ok (from_json_fails ("{\"alow\":[\"ok.com\"]}"), "an unknown key refused (a typo must not open the network)");
  ok (from_json_fails ("{\"allow\":[\"ok.com\\u0000.evil\"]}"), "an entry with NUL refused");
  {
    json_object *o = json_object_new_object (), *a = json_object_new_array ();
    char e[32];
    for (int i = 0; i < RT_EGRESS_MAX_ENTRIES + 1; i++)
      {
        snprintf (e, sizeof (e), "h%d.example.com", i);
        json_object_array_add (a, json_object_new_string (e));
      }
    json_object_object_add (o, "allow", a);
    ok (from_json_fails (json_object_to_json_string (o)), "257 entries refused");
    json_object_array_del_idx (a, 0, 1);
    {
      struct rt_egress_rules r = rules (json_object_to_json_string (o));
      ok (r.allow && r.allow[255] && r.allow[256] == NULL, "256 entries accepted");
      rt_egress_rules_clear (&r);
    }
    json_object_put (o);
  }

  /* Decisions.  */
  {
    struct rt_egress_rules open = rules ("{}");
    struct rt_egress_rules off = rules ("{\"internet\":false,\"allow\":[\"example.com\"]}");
    struct rt_egress_rules wild = rules ("{\"allow\":[\"*.example.com\"]}");
    struct rt_egress_rules mixed = rules ("{\"allow\":[\"*.example.com\",\"api.other.org\",\"203.0.113.0/24\","
                                          "\"2001:db8::/32\"],\"deny\":[\"bad.example.com\",\"203.0.113.128/25\"]}");
    struct rt_egress_rules names = rules ("{\"allow\":[\"api.other.org\"]}");
    struct rt_egress_rules denyall = rules ("{\"deny\":[\"0.0.0.0/0\",\"::/0\"]}");
    struct rt_egress_rules trial = rules ("{}");
    trial.trial = true;

    DECIDE (off, "example.com", NULL, 0, RT_EGRESS_INTERNET_OFF);
    DECIDE (off, NULL, "1.1.1.1", 443, RT_EGRESS_INTERNET_OFF);
    DECIDE (open, "anything.net", NULL, 0, RT_EGRESS_ALLOWED);
    DECIDE (open, "anything.net", "93.184.216.34", 443, RT_EGRESS_ALLOWED);
    DECIDE (open, NULL, "2606:4700::1111", 443, RT_EGRESS_ALLOWED);
    DECIDE (open, NULL, NULL, 0, RT_EGRESS_ALLOWED);

    DECIDE (wild, "a.example.com", NULL, 0, RT_EGRESS_ALLOWED);
    DECIDE (wild, "A.B.Example.COM.", NULL, 443, RT_EGRESS_ALLOWED);
    DECIDE (wild, "example.com", NULL, 0, RT_EGRESS_NOT_ALLOWED);
    DECIDE (wild, "badexample.com", NULL, 0, RT_EGRESS_NOT_ALLOWED);
    DECIDE (wild, "a.example.com.evil.net", NULL, 0, RT_EGRESS_NOT_ALLOWED);
    DECIDE (wild, "a.example.com..", NULL, 0, RT_EGRESS_NOT_ALLOWED);
    DECIDE (wild, "a .example.com", NULL, 0, RT_EGRESS_NOT_ALLOWED);
    DECIDE (wild, NULL, "93.184.216.34", 443, RT_EGRESS_NOT_ALLOWED);
    DECIDE (wild, NULL, NULL, 0, RT_EGRESS_NOT_ALLOWED);
    DECIDE (names, "API.other.org.", "93.184.216.34", 443, RT_EGRESS_ALLOWED);
    DECIDE (names, "other.org", NULL, 0, RT_EGRESS_NOT_ALLOWED);
    DECIDE (names, "x.api.other.org", NULL, 0, RT_EGRESS_NOT_ALLOWED);

    /* deny beats allow, by name and by CIDR.  */
    DECIDE (mixed, "bad.example.com", NULL, 0, RT_EGRESS_DENIED);
    DECIDE (mixed, "BAD.example.com.", "93.184.216.34", 443, RT_EGRESS_DENIED);
    DECIDE (mixed, "good.example.com", "203.0.113.200", 443, RT_EGRESS_DENIED);
    DECIDE (mixed, NULL, "203.0.113.129", 443, RT_EGRESS_DENIED);
    DECIDE (mixed, NULL, "::ffff:203.0.113.129", 443, RT_EGRESS_DENIED);
    DECIDE (mixed, "203.0.113.130", NULL, 443, RT_EGRESS_DENIED);
    DECIDE (denyall, "example.com", "1.1.1.1", 443, RT_EGRESS_DENIED);
    DECIDE (denyall, NULL, "2606:4700::1111", 443, RT_EGRESS_DENIED);
    /* CIDR allow.  */
    DECIDE (mixed, NULL, "203.0.113.5", 443, RT_EGRESS_ALLOWED);
    DECIDE (mixed, "203.0.113.5", NULL, 443, RT_EGRESS_ALLOWED);
    DECIDE (mixed, NULL, "::ffff:203.0.113.5", 443, RT_EGRESS_ALLOWED);
    DECIDE (mixed, NULL, "2001:db8:1::5", 443, RT_EGRESS_ALLOWED);
    DECIDE (mixed, "[2001:db8::5]", NULL, 443, RT_EGRESS_ALLOWED);
    DECIDE (mixed, NULL, "203.0.114.1", 443, RT_EGRESS_NOT_ALLOWED);
    DECIDE (mixed, NULL, "2001:db9::1", 443, RT_EGRESS_NOT_ALLOWED);
    DECIDE (mixed, "203.0.114.1", NULL, 443, RT_EGRESS_NOT_ALLOWED);
    /* An allowed name is allowed whatever public address it resolves to.  */
    DECIDE (mixed, "a.example.com", "198.51.100.7", 443, RT_EGRESS_ALLOWED);
    /* Name only, allow list with CIDRs: provisional; then judged per address.  */
    DECIDE (mixed, "unknown.net", NULL, 443, RT_EGRESS_ALLOWED);
    DECIDE (mixed, "unknown.net", "203.0.113.5", 443, RT_EGRESS_ALLOWED);
    DECIDE (mixed, "unknown.net", "198.51.100.7", 443, RT_EGRESS_NOT_ALLOWED);
    DECIDE (names, "unknown.net", NULL, 443, RT_EGRESS_NOT_ALLOWED);

    /* Always refused, even when the name is allowed.  */
    {
      static const char *const refused[]
          = { "10.1.2.3",   "172.16.0.1",  "172.31.255.255", "192.168.1.1", "100.64.0.1", "100.127.255.255",
              "127.0.0.1",  "169.254.169.254", "0.0.0.0",    "0.1.2.3",     "224.0.0.1",  "239.255.255.250",
              "240.0.0.1",  "255.255.255.255", "::",         "::1",         "fd00::1",    "fc00::1",
              "fe80::1",    "febf::1",     "fec0::1",        "ff02::1",     "::ffff:127.0.0.1", "::ffff:10.0.0.1",
              "::ffff:169.254.169.254", "::127.0.0.1", "64:ff9b::a00:1" };
      for (size_t i = 0; i < sizeof (refused) / sizeof (refused[0]); i++)
        {
          DECIDE (wild, "a.example.com", refused[i], 443, RT_EGRESS_PRIVATE);
          DECIDE (open, refused[i], NULL, 443, RT_EGRESS_PRIVATE);
          ok (rt_egress_address_refused (sa (refused[i])), "%s is refused", refused[i]);
        }
      /* 10.0.0.0/8 in the allow list does not open private space.  */
      {
        struct rt_egress_rules priv = rules ("{\"allow\":[\"10.0.0.0/8\"]}");
        DECIDE (priv, NULL, "10.1.2.3", 443, RT_EGRESS_PRIVATE);
        rt_egress_rules_clear (&priv);
      }
    }
    {
      static const char *const public[] = { "172.32.0.1",   "172.15.255.255", "100.128.0.1", "100.63.255.255",
                                            "169.253.1.1",  "11.0.0.1",       "1.1.1.1",     "223.255.255.255",
                                            "192.169.0.1",  "2606:4700::1111", "fe7f::1",    "::ffff:8.8.8.8",
                                            "64:ff9b::808:808" };
      for (size_t i = 0; i < sizeof (public) / sizeof (public[0]); i++)
        {
          DECIDE (open, "x.example.net", public[i], 443, RT_EGRESS_ALLOWED);
          ok (!rt_egress_address_refused (sa (public[i])), "%s is not refused", public[i]);
        }
    }
    /* Names resolvers read as addresses are judged as addresses.  */
    DECIDE (open, "127.1", NULL, 80, RT_EGRESS_PRIVATE);
    DECIDE (open, "0x7f000001", NULL, 80, RT_EGRESS_PRIVATE);
    DECIDE (open, "2130706433", NULL, 80, RT_EGRESS_PRIVATE);
    DECIDE (open, "[::1]", NULL, 80, RT_EGRESS_PRIVATE);
    DECIDE (open, "localhost.", "127.0.0.1", 80, RT_EGRESS_PRIVATE);
    /* A refused literal name refuses even when a public address is given.  */
    DECIDE (open, "10.0.0.1", "1.1.1.1", 80, RT_EGRESS_PRIVATE);
    /* Names that cannot be judged.  */
    DECIDE (open, "evil.com/x", NULL, 80, RT_EGRESS_NOT_ALLOWED);
    DECIDE (open, "evil.com:80", NULL, 80, RT_EGRESS_NOT_ALLOWED);
    DECIDE (open, "", NULL, 80, RT_EGRESS_NOT_ALLOWED);
    DECIDE (open, "_dmarc.example.com", NULL, 0, RT_EGRESS_ALLOWED);
    {
      struct sockaddr_storage ss = { 0 };
      ss.ss_family = AF_UNIX;
      ok (rt_egress_decide (&open, NULL, (struct sockaddr *) &ss, 0) == RT_EGRESS_PRIVATE
              && rt_egress_address_refused ((struct sockaddr *) &ss),
          "an unknown address family is refused");
      ok (!rt_egress_address_refused (NULL), "no address is not a refused one");
    }

    /* Ports.  */
    DECIDE (open, "smtp.example.com", NULL, 25, RT_EGRESS_BLOCKED_PORT);
    DECIDE (open, NULL, "1.1.1.1", 465, RT_EGRESS_BLOCKED_PORT);
    DECIDE (mixed, "a.example.com", NULL, 587, RT_EGRESS_BLOCKED_PORT);
    DECIDE (open, NULL, "1.1.1.1", 2525, RT_EGRESS_ALLOWED);
    DECIDE (open, NULL, "1.1.1.1", 65536, RT_EGRESS_BLOCKED_PORT);
    DECIDE (open, NULL, "1.1.1.1", -1, RT_EGRESS_BLOCKED_PORT);
    DECIDE (trial, "example.com", NULL, 80, RT_EGRESS_ALLOWED);
    DECIDE (trial, "example.com", "1.1.1.1", 443, RT_EGRESS_ALLOWED);
    DECIDE (trial, "example.com", NULL, 8080, RT_EGRESS_TRIAL_PORT);
    DECIDE (trial, "example.com", NULL, 22, RT_EGRESS_TRIAL_PORT);
    DECIDE (trial, "example.com", NULL, 25, RT_EGRESS_BLOCKED_PORT);
    DECIDE (trial, "example.com", NULL, 0, RT_EGRESS_ALLOWED);
    /* The order: internet off first, ports before addresses.  */
    DECIDE (off, NULL, "10.0.0.1", 25, RT_EGRESS_INTERNET_OFF);
    DECIDE (open, NULL, "10.0.0.1", 25, RT_EGRESS_BLOCKED_PORT);

    ok (strcmp (rt_egress_verdict_str (RT_EGRESS_PRIVATE), "private_address") == 0
            && strcmp (rt_egress_verdict_str (RT_EGRESS_NOT_ALLOWED), "not_allowed") == 0
            && strcmp (rt_egress_verdict_str (RT_EGRESS_TRIAL_PORT), "trial_port") == 0,
        "verdict strings");

    rt_egress_rules_clear (&open);
    rt_egress_rules_clear (&off);
    rt_egress_rules_clear (&wild);
    rt_egress_rules_clear (&mixed);
    rt_egress_rules_clear (&names);
    rt_egress_rules_clear (&denyall);
    rt_egress_rules_clear (&trial);
  }
  test_names_agree ();
  return tap_done ();
}
