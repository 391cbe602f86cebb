/* test-image-ref.c - image references as `docker pull` takes them
   (image/ref.h): the normalised form of each accepted one, and a reason
   for each refused one.  */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "image/ref.h"
#include "tap.h"

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const struct
{
  const char *in, *want; /* want: rt_image_ref_string, or NULL: refused */
  const char *why;       /* a word of the refusal */
} cases[] = {
  { "python", "docker.io/library/python:latest", NULL },
  { "python:3.12-slim", "docker.io/library/python:3.12-slim", NULL },
  { "library/python", "docker.io/library/python:latest", NULL },
  { "docker.io/python", "docker.io/library/python:latest", NULL },
  { "index.docker.io/python:3", "docker.io/library/python:3", NULL },
  { "docker.io/org/img", "docker.io/org/img:latest", NULL },
  { "foo/bar", "docker.io/foo/bar:latest", NULL },
  { "ghcr.io/org/img:tag", "ghcr.io/org/img:tag", NULL },
  { "localhost/foo", "localhost/foo:latest", NULL },
  { "localhost:5000/foo/bar:1", "localhost:5000/foo/bar:1", NULL },
  { "127.0.0.1:5000/repo@sha256:" D64, "127.0.0.1:5000/repo@sha256:" D64, NULL },
  { "repo:tag@sha256:" D64, "docker.io/library/repo@sha256:" D64, NULL },
  { "host:5000", "docker.io/library/host:5000", NULL },
  { "[::1]:5000/a", "[::1]:5000/a:latest", NULL },
  { "Foo/bar", "Foo/bar:latest", NULL },
  { "a__b/c-d/e.f/g--h", "docker.io/a__b/c-d/e.f/g--h:latest", NULL },
  { "my-registry.example.com:443/a/b/c:v1.2_x-y", "my-registry.example.com:443/a/b/c:v1.2_x-y", NULL },
  { "a:_x", "docker.io/library/a:_x", NULL },
  { "", NULL, "needed" },
  { "a b", NULL, "printable" },
  { "a\tb", NULL, "printable" },
  { "caf\xc3\xa9", NULL, "printable" },
  { "Python", NULL, "lower-case" },
  { "ghcr.io/Org/img", NULL, "lower-case" },
  { "a:", NULL, "tag" },
  { "a:.x", NULL, "tag" },
  { "a:-x", NULL, "tag" },
  { "a:x/y", NULL, "registry" },
  { "a@sha256:abc", NULL, "digest" },
  { "a@md5:" D64, NULL, "digest" },
  { "a@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", NULL, "digest" },
  { "a@", NULL, "digest" },
  { "a@sha256:" D64 "@sha256:" D64, NULL, "digest" },
  { D64, NULL, "image id" },
  { "host:abc/x", NULL, "registry" },
  { "host:123456/x", NULL, "registry" },
  { "-host.io/x", NULL, "registry" },
  { "host-.io/x", NULL, "registry" },
  { "host..io/x", NULL, "registry" },
  { "[::1/x", NULL, "registry" },
  { "[]:5000/x", NULL, "registry" },
  { "[fe80::1%eth0]/x", NULL, "registry" },
  { "a//b", NULL, "part" },
  { "a/", NULL, "part" },
  { "/a", NULL, "part" },
  { "a___b", NULL, "part" },
  { "a-", NULL, "part" },
  { "-a", NULL, "part" },
  { ".a", NULL, "part" },
  { "a..b", NULL, "part" },
  { "a_-b", NULL, "part" },
  { "a/b%2e", NULL, "part" },
  { "ghcr.io", "docker.io/library/ghcr.io:latest", NULL }, /* no '/': a name on Docker Hub, as Docker reads it */
};

static const struct
{
  const char *in;
  bool loopback;
} loopbacks[] = {
  { "localhost:5000/x", true },   { "localhost/x", true },       { "127.0.0.1/x", true },
  { "127.255.0.9:80/x", true },   { "[::1]:5000/x", true },      { "[::1]/x", true },
  { "127.1/x", false },           { "127.0.0.256/x", false },    { "127.0.0.1.nip.io/x", false },
  { "localhost.example/x", false }, { "example.com/x", false },  { "python", false },
  { "[::2]/x", false },           { "127.0.0.0001/x", false },   { "10.0.0.1:5000/x", false },
};

static void
test_parse (void)
{
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    {
      struct rt_image_ref ref;
      rt_error *err = NULL;
      int ret = rt_image_ref_parse (cases[i].in, &ref, &err);
      cleanup_free char *got = ret == 0 ? rt_image_ref_string (&ref) : NULL;

      if (cases[i].want)
        ok (ret == 0 && got && strcmp (got, cases[i].want) == 0, "'%.80s' is %s (got %s%s)", cases[i].in,
            cases[i].want, got ? got : "an error: ", err ? err->msg : "");
      else
        ok (ret < 0 && err && strcmp (err->code, "invalid_request") == 0 && ref.domain == NULL
                && (cases[i].why == NULL || strstr (err->msg, cases[i].why)),
            "'%.80s' is refused%s%s (%s)", cases[i].in, cases[i].why ? " for its " : "",
            cases[i].why ? cases[i].why : "", err ? err->msg : "accepted");
      rt_error_free (err);
      if (ret == 0)
        rt_image_ref_clear (&ref);
    }
}

static void
test_parts (void)
{
  struct rt_image_ref ref;
  char *name = malloc (300);

  ok (rt_image_ref_parse ("python:3.12", &ref, NULL) == 0 && strcmp (rt_image_ref_api_host (&ref), "registry-1.docker.io") == 0
          && strcmp (rt_image_ref_manifest_key (&ref), "3.12") == 0 && ref.digest == NULL,
      "Docker Hub's API is at registry-1.docker.io; the manifest asked for by tag");
  rt_image_ref_clear (&ref);
  ok (rt_image_ref_parse ("ghcr.io/o/i:t@sha256:" D64, &ref, NULL) == 0 && strcmp (rt_image_ref_api_host (&ref), "ghcr.io") == 0
          && strcmp (rt_image_ref_manifest_key (&ref), "sha256:" D64) == 0 && strcmp (ref.tag, "t") == 0,
      "another registry's API is at its name; a digest pins the manifest, the tag is kept");
  rt_image_ref_clear (&ref);
  ok (rt_image_ref_parse ("r@sha256:" D64, &ref, NULL) == 0 && ref.tag == NULL, "a digest alone: no tag");
  rt_image_ref_clear (&ref);

  /* The name's 255 counts the registry and the path.  */
  memset (name, 'a', 299);
  name[299] = '\0';
  name[255 - 18] = '\0'; /* "docker.io/library/" + 237 = 255 */
  ok (rt_image_ref_parse (name, &ref, NULL) == 0, "a name of 255 characters, normalised, is taken");
  rt_image_ref_clear (&ref);
  name[255 - 18] = 'a';
  name[256 - 18] = '\0';
  ok (rt_image_ref_parse (name, &ref, NULL) < 0 && ref.path == NULL, "… 256 is refused");
  free (name);

  name = malloc (RT_IMAGE_REF_MAX + 2);
  memset (name, 'a', RT_IMAGE_REF_MAX + 1);
  name[RT_IMAGE_REF_MAX + 1] = '\0';
  ok (rt_image_ref_parse (name, &ref, NULL) < 0, "a reference past %d bytes is refused", RT_IMAGE_REF_MAX);
  free (name);
  {
    char tag[140] = "a:";

    memset (tag + 2, 't', 128);
    tag[130] = '\0';
    ok (rt_image_ref_parse (tag, &ref, NULL) == 0, "a tag of 128 characters is taken");
    rt_image_ref_clear (&ref);
    tag[130] = 't';
    tag[131] = '\0';
    ok (rt_image_ref_parse (tag, &ref, NULL) < 0, "… 129 is refused");
  }
  ok (rt_image_ref_parse (NULL, &ref, NULL) < 0, "no reference at all is refused");
}

static void
test_loopback (void)
{
  for (size_t i = 0; i < sizeof loopbacks / sizeof *loopbacks; i++)
    {
      struct rt_image_ref ref;
      int ret = rt_image_ref_parse (loopbacks[i].in, &ref, NULL);

      ok (ret == 0 && rt_image_ref_loopback (&ref) == loopbacks[i].loopback, "'%s' is %son loopback", loopbacks[i].in,
          loopbacks[i].loopback ? "" : "not ");
      if (ret == 0)
        rt_image_ref_clear (&ref);
    }
}

int
main (void)
{
  test_parse ();
  test_parts ();
  test_loopback ();
  return tap_done ();
}
