/* ref.h - a container image reference as `docker pull` takes it:
   "python:3.12-slim", "ghcr.io/org/img:tag", "host:5000/repo@sha256:…",
   normalised by Docker's rules (the distribution project's reference
   grammar): no registry means Docker Hub ("docker.io", its API at
   "registry-1.docker.io"), a one-part name there is "library/NAME",
   "index.docker.io" is "docker.io", no tag and no digest is ":latest".
   Pure functions over strings, for the registry client and a fuzzer.  */
#ifndef RT_IMAGE_REF_H
#define RT_IMAGE_REF_H

#include <stdbool.h>

#include "runtime.h"

/* The longest reference taken, and a name's most (the grammar's).  */
#define RT_IMAGE_REF_MAX 4096
#define RT_IMAGE_REF_NAME_MAX 255

struct rt_image_ref
{
  char *domain; /* "docker.io", "ghcr.io", "127.0.0.1:5000", "[::1]:5000" */
  char *path;   /* "library/python", "org/img" */
  char *tag;    /* "3.12-slim"; "latest" when neither was given; NULL
                   when only a digest was */
  char *digest; /* "sha256:<64 hex>", or NULL */
};

/* Parses @s into @ref (cleared first; rt_image_ref_clear frees it).
   0, or -1 with `invalid_request` naming what is wrong.  */
int rt_image_ref_parse (const char *s, struct rt_image_ref *ref, rt_error **err);
void rt_image_ref_clear (struct rt_image_ref *ref);

/* "docker.io/library/python:3.12-slim", "host:5000/repo@sha256:…" (the
   tag is left out when a digest pins the image), newly allocated.  */
char *rt_image_ref_string (const struct rt_image_ref *ref);

/* The host (and port) the registry's HTTP API is at: "registry-1.docker.io"
   for Docker Hub, the domain otherwise.  */
const char *rt_image_ref_api_host (const struct rt_image_ref *ref);

/* What the manifest is asked for by: the digest when there is one, else
   the tag.  */
const char *rt_image_ref_manifest_key (const struct rt_image_ref *ref);

/* Whether the registry is on loopback ("localhost", 127.0.0.0/8, [::1],
   with any port): the only place plain HTTP is used without being asked
   for, as Docker does.  */
bool rt_image_ref_loopback (const struct rt_image_ref *ref);

#endif
