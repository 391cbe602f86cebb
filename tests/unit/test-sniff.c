/* test-sniff.c - SNI and HTTP heads out of hostile first bytes: real
   shapes, every truncation, and random garbage and mutations (which must
   never crash nor read past the buffer: run under ASan now and then).  */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "net/sniff.h"
#include "tap.h"

struct bytes
{
  unsigned char b[24 * 1024];
  size_t n;
};

static void
put8 (struct bytes *o, unsigned v)
{
  o->b[o->n++] = v & 0xff;
}

static void
put16 (struct bytes *o, unsigned v)
{
  put8 (o, v >> 8);
  put8 (o, v);
}

static void
put24 (struct bytes *o, unsigned v)
{
  put8 (o, v >> 16);
  put16 (o, v);
}

static void
putn (struct bytes *o, const void *p, size_t n)
{
  memcpy (o->b + o->n, p, n);
  o->n += n;
}

static void
put_ext (struct bytes *o, unsigned type, const struct bytes *body)
{
  put16 (o, type);
  put16 (o, body->n);
  putn (o, body->b, body->n);
}

static void
put_sni_ext (struct bytes *o, const char *name)
{
  struct bytes e = { .n = 0 };
  put16 (&e, 3 + strlen (name)); /* server_name_list */
  put8 (&e, 0);                  /* host_name */
  put16 (&e, strlen (name));
  putn (&e, name, strlen (name));
  put_ext (o, 0, &e);
}

/* A TLS 1.3-style ClientHello handshake message as browsers send it, with
   @sni (or none, or two SNI extensions), an X25519MLKEM768 key share too
   when @pq (as Chrome and Firefox send), and a padding extension of @pad
   bytes when not 0.  */
static void
hello_msg (struct bytes *hs, const char *sni, bool twice, bool pq, size_t pad)
{
  static struct bytes body, exts, e;
  unsigned char random[32];

  for (int i = 0; i < 32; i++)
    random[i] = i * 7;
  body.n = exts.n = e.n = 0;
  put16 (&body, 0x0303);
  putn (&body, random, 32);
  put8 (&body, 32);
  putn (&body, random, 32);
  put16 (&body, 6);
  put16 (&body, 0x1301);
  put16 (&body, 0x1302);
  put16 (&body, 0xc02f);
  put8 (&body, 1);
  put8 (&body, 0);

  put8 (&e, 2); /* supported_versions: TLS 1.3 */
  put16 (&e, 0x0304);
  put_ext (&exts, 0x002b, &e);
  if (sni)
    put_sni_ext (&exts, sni);
  if (sni && twice)
    put_sni_ext (&exts, "other.example");
  e.n = 0;
  put16 (&e, 36 + (pq ? 4 + 1216 : 0)); /* key_share: x25519, and the hybrid */
  if (pq)
    {
      put16 (&e, 0x11ec);
      put16 (&e, 1216);
      memset (e.b + e.n, 0xa5, 1216);
      e.n += 1216;
    }
  put16 (&e, 0x001d);
  put16 (&e, 32);
  putn (&e, random, 32);
  put_ext (&exts, 0x0033, &e);
  if (pad)
    {
      e.n = pad;
      memset (e.b, 0, pad);
      put_ext (&exts, 0x0015, &e);
    }
  put16 (&body, exts.n);
  putn (&body, exts.b, exts.n);

  hs->n = 0;
  put8 (hs, 1);
  put24 (hs, body.n);
  putn (hs, body.b, body.n);
}

/* @hs in TLS records of at most @rec bytes each (3.1 first, 3.3 after, as
   browsers send); returns the length written to @out.  */
static size_t
records (unsigned char *out, const struct bytes *hs, size_t rec)
{
  size_t n = 0;

  for (size_t off = 0; off < hs->n; off += rec)
    {
      size_t take = hs->n - off < rec ? hs->n - off : rec;
      out[n++] = 0x16;
      out[n++] = 3;
      out[n++] = off == 0 ? 1 : 3;
      out[n++] = take >> 8;
      out[n++] = take & 0xff;
      memcpy (out + n, hs->b + off, take);
      n += take;
    }
  return n;
}

/* A ClientHello (hello_msg) in one record or split in two after @split
   handshake bytes.  */
static size_t
client_hello (unsigned char *out, const char *sni, bool twice, size_t split)
{
  static struct bytes hs, rec;

  hello_msg (&hs, sni, twice, false, 0);
  rec.n = 0;

  if (split == 0 || split >= hs.n)
    split = hs.n;
  put8 (&rec, 0x16);
  put16 (&rec, 0x0301);
  put16 (&rec, split);
  putn (&rec, hs.b, split);
  if (split < hs.n)
    {
      put8 (&rec, 0x16);
      put16 (&rec, 0x0303);
      put16 (&rec, hs.n - split);
      putn (&rec, hs.b + split, hs.n - split);
    }
  memcpy (out, rec.b, rec.n);
  return rec.n;
}

static int
sniff (const void *buf, size_t len, char **name)
{
  /* A copy of exactly @len bytes, so ASan sees any read past the end.  */
  unsigned char *copy = malloc (len ? len : 1);
  int ret;

  memcpy (copy, buf, len);
  *name = NULL;
  ret = rt_sniff_name (copy, len, name);
  free (copy);
  return ret;
}

static int
head (const char *text, struct rt_http_head *h)
{
  size_t len = strlen (text);
  char *copy = malloc (len ? len : 1);
  int ret;

  memcpy (copy, text, len);
  ret = rt_http_head_parse (copy, len, h);
  free (copy);
  return ret;
}

static bool
name_sane (const char *s)
{
  if (s == NULL || *s == '\0' || strlen (s) > 253)
    return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.'
          || *s == ':'))
      return false;
  return true;
}

static unsigned seed = 424242;

static unsigned
rnd (void)
{
  seed = seed * 1103515245 + 12345;
  return seed >> 16;
}

/* Every prefix of @buf but the whole: -1 (a valid start always waits).  */
static bool
prefixes_wait (const unsigned char *buf, size_t len)
{
  for (size_t i = 0; i < len; i++)
    {
      char *name;
      int ret = sniff (buf, i, &name);
      free (name);
      if (ret != -1)
        {
          printf ("# prefix of %zu bytes gave %d\n", i, ret);
          return false;
        }
    }
  return true;
}

/* The hello with a padding extension making the handshake message @msg
   bytes long, in records of @rec bytes, into @out.  */
static size_t
hello_of (unsigned char *out, size_t msg, size_t rec)
{
  static struct bytes hs;
  size_t base;

  hello_msg (&hs, "big.example", false, true, 1);
  base = hs.n - 1 - 4; /* without the padding extension */
  hello_msg (&hs, "big.example", false, true, msg - base - 4);
  return records (out, &hs, rec);
}

/* What sniff.c cannot read whole, once the first byte says TLS, is refused
   (RT_SNIFF_UNREADABLE), never taken for a hello without SNI: the server
   behind a CDN address might find a name in it that nobody checked.  Real
   hellos of every size a client sends are still read.  */
static void
test_unreadable (void)
{
  static unsigned char out[40 * 1024];
  static struct bytes hs;
  char *name = NULL;
  size_t n;
  int ret;

  hello_msg (&hs, "pq.example", false, true, 1800 - 1450);
  n = records (out, &hs, 16384);
  ret = sniff (out, n, &name);
  ok (ret == 1 && strcmp (name, "pq.example") == 0, "a Chrome-sized hello (%zu bytes, X25519MLKEM768): its SNI", n);
  free (name);
  ok (prefixes_wait (out, n), "every truncation of it waits");

  n = hello_of (out, 12000, 16384);
  ret = sniff (out, n, &name);
  ok (ret == 1 && strcmp (name, "big.example") == 0, "a 12000-byte hello (a big PSK): its SNI");
  free (name);
  n = hello_of (out, 12000, 1000);
  ret = sniff (out, n, &name);
  ok (ret == 1 && strcmp (name, "big.example") == 0, "the same over 12 records: its SNI");
  free (name);
  n = hello_of (out, RT_SNIFF_MAX - 5, 16384);
  ret = sniff (out, n, &name);
  ok (n == RT_SNIFF_MAX && ret == 1 && strcmp (name, "big.example") == 0, "a hello filling 16 KiB exactly: its SNI");
  free (name);

  n = hello_of (out, RT_SNIFF_MAX - 4, 16384);
  ok (sniff (out, 9, &name) == RT_SNIFF_UNREADABLE, "a hello one byte over 16 KiB: unreadable from its header");
  ok (sniff (out, n, &name) == RT_SNIFF_UNREADABLE, "and whole: unreadable, not 'no SNI'");
  n = hello_of (out, 20000, 16384);
  ok (sniff (out, n, &name) == RT_SNIFF_UNREADABLE, "a 20000-byte hello (padding) over two records: unreadable");
  n = hello_of (out, 16000, 100);
  ret = sniff (out, RT_SNIFF_MAX - 1, &name);
  ok (ret == -1, "a 16000-byte hello in 100-byte records waits below 16 KiB (%d)", ret);
  ok (sniff (out, n, &name) == RT_SNIFF_UNREADABLE, "and past 16 KiB of records is unreadable");

  hello_msg (&hs, "pq.example", false, true, 0);
  n = records (out, &hs, 16384);
  out[2] = 5;
  ok (sniff (out, n, &name) == RT_SNIFF_UNREADABLE, "record version 3.5: unreadable");
  out[2] = 0xff;
  ok (sniff (out, 3, &name) == RT_SNIFF_UNREADABLE, "record version 3.255: told at byte 3");
  out[2] = 1;
  n = records (out, &hs, 200);
  memcpy (out + 205, "\x14\x03\x03\x00\x01\x01", 6);
  ok (sniff (out, 211, &name) == RT_SNIFF_UNREADABLE, "a ChangeCipherSpec inside the hello: unreadable");

  hello_msg (&hs, "x.example", false, false, 0);
  hs.b[4 + 2 + 32 + 1 + 32 + 2 + 6 + 2]++; /* the extensions' length, high byte */
  n = records (out, &hs, 16384);
  ok (sniff (out, n, &name) == RT_SNIFF_UNREADABLE, "extensions longer than the hello: unreadable");
  hello_msg (&hs, "x.example", false, false, 0);
  hs.b[3]--;
  hs.n--;
  n = records (out, &hs, 16384);
  ok (sniff (out, n, &name) == RT_SNIFF_UNREADABLE, "a hello cut one byte short by its own length: unreadable");
}

int
main (void)
{
  unsigned char hello[4096];
  char *name;
  size_t n;
  int ret;

  /* TLS.  */
  n = client_hello (hello, "Www.Example.COM", false, 0);
  ret = sniff (hello, n, &name);
  ok (ret == 1 && name && strcmp (name, "www.example.com") == 0, "ClientHello SNI, lowercased (%s)", name);
  free (name);
  ok (prefixes_wait (hello, n), "every truncation of the ClientHello waits for more");
  {
    unsigned char more[4096 + 100];
    memcpy (more, hello, n);
    memset (more + n, 0x17, 100);
    ret = sniff (more, n + 100, &name);
    ok (ret == 1 && strcmp (name, "www.example.com") == 0, "bytes after the ClientHello do not matter");
    free (name);
  }
  n = client_hello (hello, "split.example.com", false, 40);
  ret = sniff (hello, n, &name);
  ok (ret == 1 && name && strcmp (name, "split.example.com") == 0, "ClientHello split over two records");
  free (name);
  ok (prefixes_wait (hello, n), "every truncation of the split ClientHello waits for more");
  n = client_hello (hello, "a.example.com", false, 2);
  ret = sniff (hello, n, &name);
  ok (ret == 1 && strcmp (name, "a.example.com") == 0, "split inside the handshake header");
  free (name);
  n = client_hello (hello, NULL, false, 0);
  ok (sniff (hello, n, &name) == 0 && name == NULL, "ClientHello without SNI: 0");
  n = client_hello (hello, "one.example", true, 0);
  ok (sniff (hello, n, &name) == RT_SNIFF_UNREADABLE, "two SNI extensions: unreadable");
  n = client_hello (hello, "bad name.example", false, 0);
  ok (sniff (hello, n, &name) == RT_SNIFF_UNREADABLE, "SNI with a space: unreadable");
  n = client_hello (hello, "bad\x01.example", false, 0);
  ok (sniff (hello, n, &name) == RT_SNIFF_UNREADABLE, "SNI with a control character: unreadable");
  n = client_hello (hello, "trailing.example.", false, 0);
  ret = sniff (hello, n, &name);
  ok (ret == 1 && strcmp (name, "trailing.example") == 0, "SNI trailing dot dropped");
  free (name);
  {
    unsigned char tls[8] = { 0x16, 0x03, 0x01, 0x00, 0x04, 0x02, 0x00, 0x00 }; /* ServerHello type */
    ok (sniff (tls, 8, &name) == RT_SNIFF_UNREADABLE, "a handshake that is not a ClientHello: unreadable");
    tls[0] = 0x17;
    ok (sniff (tls, 8, &name) == 0, "application data: not TLS, 0");
    tls[0] = 0x16;
    tls[1] = 0x02;
    ok (sniff (tls, 2, &name) == RT_SNIFF_UNREADABLE, "a bad record version is told at byte 2");
    unsigned char huge[5] = { 0x16, 0x03, 0x01, 0x48, 0x01 }; /* 18433 > 2^14 */
    ok (sniff (huge, 5, &name) == RT_SNIFF_UNREADABLE, "record longer than TLS allows: unreadable");
    unsigned char big_hs[9] = { 0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0x00, 0x40, 0x00 };
    ok (sniff (big_hs, 9, &name) == RT_SNIFF_UNREADABLE, "a ClientHello that cannot fit in 16 KiB: unreadable");
    unsigned char empty_rec[5] = { 0x16, 0x03, 0x01, 0x00, 0x00 };
    ok (sniff (empty_rec, 5, &name) == RT_SNIFF_UNREADABLE, "an empty handshake record: unreadable");
  }
  {
    /* A valid slow start: one-byte records (legal, if odd) until 16 KiB.  */
    static unsigned char slow[RT_SNIFF_MAX + 12];
    size_t k;
    for (k = 0; k + 6 <= sizeof (slow); k += 6)
      {
        /* type ClientHello, length 0x001000: more than the records bring */
        unsigned char rec[6] = { 0x16, 0x03, 0x01, 0x00, 0x01, k == 0 ? 0x01 : k == 12 ? 0x10 : 0x00 };
        memcpy (slow + k, rec, 6);
      }
    ret = sniff (slow, RT_SNIFF_MAX - 6, &name);
    ok (ret == -1, "tiny records below 16 KiB wait (%d)", ret);
    ret = sniff (slow, k, &name);
    ok (ret == RT_SNIFF_UNREADABLE, "no answer within 16 KiB: unreadable (%d)", ret);
  }

  test_unreadable ();

  /* HTTP Host, for transparent connections.  */
  {
    static const char *const good[][2] = {
      { "GET / HTTP/1.1\r\nHost: Example.com\r\n\r\n", "example.com" },
      { "GET /x HTTP/1.1\r\nUser-Agent: t\r\nhOsT:   example.com:8080  \r\nAccept: */*\r\n\r\n", "example.com" },
      { "GET / HTTP/1.1\r\nHost: [2001:DB8::1]:443\r\n\r\n", "2001:db8::1" },
      { "GET / HTTP/1.1\r\nHost: [::1]\r\n\r\n", "::1" },
      { "POST /api HTTP/1.0\r\nHost: 10.0.0.1:80\r\nContent-Length: 3\r\n\r\nabc", "10.0.0.1" },
      { "GET http://abs.example/ HTTP/1.1\r\n\r\n", "abs.example" },
    };
    for (size_t i = 0; i < sizeof (good) / sizeof (good[0]); i++)
      {
        ret = sniff (good[i][0], strlen (good[i][0]), &name);
        ok (ret == 1 && name && strcmp (name, good[i][1]) == 0, "HTTP Host %zu: %s", i, name ? name : "(none)");
        free (name);
        ok (prefixes_wait ((const unsigned char *) good[i][0], strlen (good[i][0]) - (i == 4 ? 3 : 0)),
            "HTTP %zu: every truncation waits", i);
      }
  }
  {
    static const char *const bad[] = {
      "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n",             /* no Host */
      "GET / HTTP/1.1\r\nHost:\r\n\r\n",                   /* empty Host */
      "GET / HTTP/1.1\r\nHost: a.com\r\nHost: b.com\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a.com\r\nHost: a.com\r\n\r\n",
      "GET / HTTP/1.1\nHost: a.com\n\n",                   /* bare LF */
      "GET / HTTP/1.1\r\nHost: a.com\rX: y\r\n\r\n",       /* bare CR */
      "GET / HTTP/1.1\r\nX: y\r\n Host: b.com\r\n\r\n",    /* obs-fold */
      "GET / HTTP/1.1\r\nHost : a.com\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a.com:\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a.com:99999\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a.com:0\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: evil.com@a.com\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a.com/x\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a..com\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: [1.2.3.4]\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: [::1]x\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a.com\x01\r\n\r\n",
      "GET / HTTP/2.0\r\nHost: a.com\r\n\r\n",
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
      "get / HTTP/1.1\r\nHost: a.com\r\n\r\n",
      "GET  / HTTP/1.1\r\nHost: a.com\r\n\r\n",
      "GET / HTTP/1.1 \r\nHost: a.com\r\n\r\n",
      "SSH-2.0-OpenSSH_9.2\r\n",
      "\x00\x01\x02\x03",
      "OPTIONS * HTTP/1.1\r\nHost: a.com\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
      {
        size_t len = strlen (bad[i]);
        ret = sniff (bad[i], len ? len : 4, &name);
        ok (ret == 0 && name == NULL, "HTTP malformed %zu: 0 (%d)", i, ret);
        free (name);
      }
    {
      static const char nul[] = "GET / HTTP/1.1\r\nHost: a.com\r\nX: a\0b\r\n\r\n";
      ok (sniff (nul, sizeof (nul) - 1, &name) == 0, "NUL in a header: 0");
      static const char nul_name[] = "GET / HTTP/1.1\r\nHo\0st: a.com\r\n\r\n";
      ok (sniff (nul_name, sizeof (nul_name) - 1, &name) == 0, "NUL in a header name: 0");
    }
    ok (sniff ("G", 1, &name) == -1 && sniff ("GET / HTTP/1.1\r\nHost: a.com\r\n\r", 30, &name) == -1,
        "a plausible start waits");
    ok (sniff ("Z9", 2, &name) == 0, "not a method: told at once");
    ok (sniff ("", 0, &name) == -1, "nothing yet: waits");
  }

  /* Garbage and mutations: never crash, never a name that is not one.  */
  {
    static const char *const http_seed = "GET http://a.example.com:8080/x?y HTTP/1.1\r\nHost: a.example.com:8080\r\n"
                                         "Proxy-Connection: keep-alive\r\n\r\n";
    unsigned char valid[3][4096], buf[4096];
    size_t vlen[3];
    int ones = 0, insane = 0, counts[4] = { 0 };

    vlen[0] = client_hello (valid[0], "mutate.example.com", false, 0);
    vlen[1] = client_hello (valid[1], "mutate.example.com", false, 50);
    vlen[2] = strlen (http_seed);
    memcpy (valid[2], http_seed, vlen[2]);
    for (int round = 0; round < 2000; round++)
      {
        size_t len;
        if (round % 2 == 0)
          {
            /* Random bytes, often with a plausible first byte.  */
            len = rnd () % 700;
            for (size_t i = 0; i < len; i++)
              buf[i] = rnd ();
            if (len > 0 && round % 4 == 0)
              buf[0] = 0x16;
            if (len > 2 && round % 8 == 2)
              memcpy (buf, "GET", 3);
            if (len > 5 && round % 8 == 6)
              {
                buf[0] = 0x16;
                buf[1] = 3;
                buf[2] = 1;
              }
          }
        else
          {
            int v = rnd () % 3, flips = 1 + rnd () % 4;
            len = vlen[v];
            memcpy (buf, valid[v], len);
            for (int f = 0; f < flips; f++)
              {
                size_t at = rnd () % len;
                switch (rnd () % 3)
                  {
                  case 0:
                    buf[at] = rnd ();
                    break;
                  case 1:
                    buf[at] ^= 1u << (rnd () % 8);
                    break;
                  default:
                    buf[at] = (rnd () % 2) ? 0xff : 0x00;
                  }
              }
            if (rnd () % 4 == 0)
              len = rnd () % (len + 1);
          }
        ret = sniff (buf, len, &name);
        if (ret < RT_SNIFF_UNREADABLE || ret > 1 || (ret == 1) != (name != NULL)
            || (ret == RT_SNIFF_UNREADABLE && buf[0] != 0x16))
          insane++;
        if (ret == 1)
          {
            ones++;
            if (!name_sane (name))
              {
                printf ("# insane name '%s'\n", name);
                insane++;
              }
          }
        counts[ret + 2]++;
        free (name);
        {
          struct rt_http_head h;
          char *copy = malloc (len ? len : 1);
          memcpy (copy, buf, len);
          ret = rt_http_head_parse (copy, len, &h);
          if (ret == 1)
            {
              if (!name_sane (h.host) || h.head_len > len || h.port < 1 || h.port > 65535)
                insane++;
              size_t ul;
              char *up = rt_http_head_upstream (copy, &h, &ul);
              free (up);
              rt_http_head_clear (&h);
            }
          else if (h.method || h.host || h.target || h.path)
            insane++;
          free (copy);
        }
      }
    ok (insane == 0, "2000 rounds of garbage and mutations: %d names, %d wait, %d no, %d unreadable (%d insane)", ones,
        counts[1], counts[2], counts[0], insane);
  }

  /* Forward proxy heads.  */
  {
    struct rt_http_head h;
    const char *t;

    t = "GET http://Example.com:8080/a/b?c=d HTTP/1.1\r\nHost: example.com:8080\r\n\r\nBODY";
    ret = head (t, &h);
    ok (ret == 1 && strcmp (h.method, "GET") == 0 && strcmp (h.host, "example.com") == 0 && h.port == 8080
            && strcmp (h.path, "/a/b?c=d") == 0 && strcmp (h.target, "http://Example.com:8080/a/b?c=d") == 0
            && h.head_len == strlen (t) - 4,
        "absolute-form with port");
    rt_http_head_clear (&h);
    ok (h.method == NULL && h.host == NULL, "clear zeroes");

    ret = head ("GET http://example.com HTTP/1.0\r\n\r\n", &h);
    ok (ret == 1 && h.port == 80 && strcmp (h.path, "/") == 0, "absolute-form without path: '/', port 80");
    rt_http_head_clear (&h);
    ret = head ("GET HTTP://example.com?q=1 HTTP/1.1\r\n\r\n", &h);
    ok (ret == 1 && strcmp (h.path, "/?q=1") == 0, "absolute-form with query only: '/?q=1'");
    rt_http_head_clear (&h);
    ret = head ("GET http://[2001:db8::1]:8080/ HTTP/1.1\r\n\r\n", &h);
    ok (ret == 1 && strcmp (h.host, "2001:db8::1") == 0 && h.port == 8080, "absolute-form IPv6");
    rt_http_head_clear (&h);
    ret = head ("GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n", &h);
    ok (ret == 1 && strcmp (h.host, "example.com") == 0 && h.port == 80 && strcmp (h.path, "/index.html") == 0,
        "origin-form takes Host");
    rt_http_head_clear (&h);

    ret = head ("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", &h);
    ok (ret == 1 && strcmp (h.method, "CONNECT") == 0 && strcmp (h.host, "example.com") == 0 && h.port == 443
            && h.path == NULL,
        "CONNECT host:443");
    rt_http_head_clear (&h);
    ret = head ("CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n", &h);
    ok (ret == 1 && strcmp (h.host, "2001:db8::1") == 0 && h.port == 443, "CONNECT [v6]:443");
    rt_http_head_clear (&h);
    ret = head ("CONNECT a.example:443 HTTP/1.1\r\nHost: other.example\r\n\r\n", &h);
    ok (ret == 1 && strcmp (h.host, "a.example") == 0, "CONNECT goes by its authority, not Host");
    rt_http_head_clear (&h);

    static const char *const bad[] = {
      "CONNECT example.com HTTP/1.1\r\n\r\n",
      "CONNECT example.com: HTTP/1.1\r\n\r\n",
      "CONNECT [2001:db8::1] HTTP/1.1\r\n\r\n",
      "CONNECT 2001:db8::1:443 HTTP/1.1\r\n\r\n",
      "GET https://example.com/ HTTP/1.1\r\n\r\n",
      "GET ftp://example.com/ HTTP/1.1\r\n\r\n",
      "GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n",
      "GET http://example.com/#frag HTTP/1.1\r\n\r\n",
      "GET http:///x HTTP/1.1\r\n\r\n",
      "GET http://example.com/ HTTP/1.1\r\nHost: evil.com\r\n\r\n",
      "GET http://example.com:8080/ HTTP/1.1\r\nHost: example.com\r\n\r\n",
      "GET /x HTTP/1.1\r\n\r\n",
      "GET x HTTP/1.1\r\nHost: a.com\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
      {
        ret = head (bad[i], &h);
        ok (ret == 0 && h.method == NULL, "proxy head malformed %zu: 0 (%d)", i, ret);
        rt_http_head_clear (&h);
      }

    ok (head ("CONNECT example.com:443 HTTP/1.1\r\nHost: x", &h) == -1, "incomplete: -1");
    ok (head ("CONNECT example.com:443 HTTP/1.1\r\n\r", &h) == -1, "incomplete blank line: -1");
    {
      static char big[RT_SNIFF_MAX + 200];
      size_t k = 0;
      k += sprintf (big, "GET / HTTP/1.1\r\nHost: a.com\r\n");
      while (k < RT_SNIFF_MAX + 100)
        k += sprintf (big + k, "X-Pad: %s\r\n", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
      ok (rt_http_head_parse (big, k, &h) == 0 && h.method == NULL, "over 16 KiB without a blank line: 0");
      ok (rt_http_head_parse (big, RT_SNIFF_MAX - 1, &h) == -1, "just under 16 KiB: still -1");
      /* One long header whose value ends the head at exactly 16 KiB, then
         one byte later.  */
      k = sprintf (big, "GET / HTTP/1.1\r\nHost: a.com\r\nX-Big: ");
      memset (big + k, 'a', RT_SNIFF_MAX - 4 - k);
      memcpy (big + RT_SNIFF_MAX - 4, "\r\n\r\nb", 5);
      ret = rt_http_head_parse (big, RT_SNIFF_MAX + 1, &h);
      ok (ret == 1 && h.head_len == RT_SNIFF_MAX, "a head of exactly 16 KiB: 1");
      rt_http_head_clear (&h);
      memcpy (big + RT_SNIFF_MAX - 4, "a\r\n\r\n", 5);
      ok (rt_http_head_parse (big, RT_SNIFF_MAX + 1, &h) == 0 && h.method == NULL, "one byte more: 0");
    }

    /* Upstream rewriting.  */
    t = "GET http://example.com/p?q HTTP/1.1\r\n"
        "Host: example.com\r\n"
        "Proxy-Connection: keep-alive\r\n"
        "User-Agent: curl/8\r\n"
        "proxy-authorization: Basic eDp5\r\n"
        "Connection: keep-alive, Upgrade\r\n"
        "KEEP-ALIVE: 300\r\n"
        "Accept: */*\r\n"
        "X-Connection: stays\r\n"
        "\r\n";
    ret = head (t, &h);
    {
      size_t ul = 0;
      char *up = ret == 1 ? rt_http_head_upstream (t, &h, &ul) : NULL;
      const char *want = "GET /p?q HTTP/1.1\r\n"
                         "Host: example.com\r\n"
                         "User-Agent: curl/8\r\n"
                         "Accept: */*\r\n"
                         "X-Connection: stays\r\n"
                         "Connection: close\r\n"
                         "\r\n";
      ok (up && ul == strlen (want) && memcmp (up, want, ul) == 0, "upstream head rewritten (hop-by-hop and proxy headers dropped)");
      free (up);
      rt_http_head_clear (&h);
    }
    t = "POST http://example.com:8080/ HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi";
    ret = head (t, &h);
    {
      size_t ul = 0;
      char *up = ret == 1 ? rt_http_head_upstream (t, &h, &ul) : NULL;
      const char *want = "POST / HTTP/1.1\r\n"
                         "Content-Length: 2\r\n"
                         "Host: example.com:8080\r\n"
                         "Connection: close\r\n"
                         "\r\n";
      ok (up && ul == strlen (want) && memcmp (up, want, ul) == 0, "upstream head gains a Host when it had none");
      free (up);
      rt_http_head_clear (&h);
    }
    t = "GET http://[::1]/ HTTP/1.0\r\n\r\n";
    ret = head (t, &h);
    {
      size_t ul = 0;
      char *up = ret == 1 ? rt_http_head_upstream (t, &h, &ul) : NULL;
      ok (up && strstr (up, "\r\nHost: [::1]\r\n") != NULL, "an added IPv6 Host is bracketed");
      free (up);
      rt_http_head_clear (&h);
    }
    t = "CONNECT a.com:443 HTTP/1.1\r\n\r\n";
    ret = head (t, &h);
    {
      size_t ul = 0;
      ok (ret == 1 && rt_http_head_upstream (t, &h, &ul) == NULL, "no upstream head for CONNECT");
      rt_http_head_clear (&h);
    }
  }
  /* Plain HTTP with no Host is still HTTP, and so is what a lenient
     server would read as a request: the requests on the connection are
     then checked strictly (the proxy's rt_relay_check_requests).  */
  {
    static const struct
    {
      const char *in;
      int want;
    } http[] = {
      { "GET / HTTP/1.0\r\n\r\n", 1 },
      { "GET / HTTP/1.1\r\nConnection: keep-alive\r\n", 1 },
      { "\r\n\r\nGET / HTTP/1.1\r\nHost: b.test\r\n", 1 },
      { "\nGET / HTTP/1.1\n", 1 },
      { "GET  /  HTTP/1.1\r\n", 1 },
      { "GET / http/1.1\r\n", 1 },
      { "get / HTTP/1.1\r\n", 0 },
      { "ping", 0 },
      { "PING\r\n", 0 },
      { "GET", -1 },
      { "GET /x", 1 },
      { "GET\t/\tHTTP/1.1\r\n", 1 },
      { "POST /x HTTP/1.1", 1 },
      { "POST", -1 },
      { "\r\nPUT", -1 },
      { "\r\n", -1 },
      { "", -1 },
      { "SSH-2.0-OpenSSH_9.6\r\n", 0 },
      { "\x16\x03\x01\x00\x05", 0 },
      { "\x03\x00\x00\x13\x0e\xe0", 0 },
      { "GET:/ HTTP/1.1\r\n", 0 },
      { " GET / HTTP/1.1\r\n", 0 },
      /* Whatever follows a method and a space: the strict checker
         refuses what it cannot read, so a lenient server reading
         "Host: evil" past an odd byte gets nothing.  */
      { "GET /\r\n", 1 },
      { "GET / \x01HTTP/1.1\r\n", 1 },
      { "GET /\xc3\xa9 HTTP/1.1\r\nHost: evil.example\r\n\r\n", 1 },
      { "GET /\x7f HTTP/1.1\r\n", 1 },
      { "GET \xff", 1 },
      { "GET ", 1 },
      { "USER anonymous\r\n", 1 },
    };
    for (size_t i = 0; i < sizeof http / sizeof http[0]; i++)
      {
        const char *in = http[i].in + strspn (http[i].in, "\r\n");
        int got = rt_sniff_is_http ((const unsigned char *) http[i].in, strlen (http[i].in));
        ok (got == http[i].want, "is_http '%.*s': %d (want %d)", (int) strcspn (in, "\r\n\t\x16\x01\x7f\xc3\xff"), in,
            got, http[i].want);
      }
    {
      char *big = malloc (RT_SNIFF_MAX + 1);
      memset (big, 'A', RT_SNIFF_MAX + 1);
      ok (rt_sniff_is_http ((const unsigned char *) big, RT_SNIFF_MAX + 1) == 1,
          "is_http: 16 KiB that could still be a request line is checked as HTTP");
      free (big);
    }
  }
  return tap_done ();
}
