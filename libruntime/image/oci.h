/* oci.h - what an OCI or Docker image says of itself: an index (or
   manifest list) with the linux/amd64 manifest picked out of it, a
   manifest's config and layers, and the config's run settings.  Read
   from a registry, a `docker save` tarball or an OCI layout alike, and
   trusted in nothing: every descriptor's digest and size is checked for
   form here and the bytes against them by the caller.  What is wrong is
   `invalid_request`, as in an import (a registry client may make it
   `bad_gateway`).  Pure functions
   over JSON text, for the pull and import code and a fuzzer.  */
#ifndef RT_IMAGE_OCI_H
#define RT_IMAGE_OCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

/* The most read of one manifest or index (Docker's own limit), and of a
   config; the most layers an image may have.  */
#define RT_OCI_MAX_MANIFEST (4u << 20)
#define RT_OCI_MAX_CONFIG (8u << 20)
#define RT_OCI_MAX_LAYERS 256u
/* "sha512:" and 128 hex digits, and the NUL.  */
#define RT_OCI_DIGEST_MAX 136

#define RT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define RT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define RT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define RT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
/* What a pull asks a registry for, in its Accept header.  */
#define RT_OCI_ACCEPT RT_OCI_INDEX ", " RT_OCI_MANIFEST ", " RT_DOCKER_LIST ", " RT_DOCKER_MANIFEST

enum rt_oci_kind
{
  RT_OCI_KIND_INDEX,    /* an OCI index or a Docker manifest list */
  RT_OCI_KIND_MANIFEST, /* an OCI or Docker v2 image manifest */
};

enum rt_oci_compression
{
  RT_OCI_TAR,
  RT_OCI_GZIP,
  RT_OCI_ZSTD,
};

struct rt_oci_desc
{
  char media_type[128];
  char digest[RT_OCI_DIGEST_MAX];
  int64_t size;
};

struct rt_oci_manifest
{
  struct rt_oci_desc config;
  struct rt_oci_desc *layers;
  enum rt_oci_compression *compression; /* each layer's */
  size_t n_layers;
};

struct rt_oci_config
{
  char **env;        /* "K=V", NULL-ended; never NULL */
  char **entrypoint; /* NULL-ended, or NULL when not set */
  char **cmd;        /* NULL-ended, or NULL when not set */
  char *workdir;     /* or NULL */
  char *user;        /* or NULL */
  char **healthcheck; /* Healthcheck.Test as given ("CMD", …), or NULL */
  char **diff_ids;   /* the layers' uncompressed digests, NULL-ended */
  size_t n_diff_ids;
};

/* Whether @s is "sha256:" and 64 lower-case hex digits, or "sha512:" and
   128: the digests a pull can check.  */
bool rt_oci_digest_valid (const char *s);

/* Whether @json is an index or a manifest: by @media_type (the registry's
   Content-Type; NULL or "" when there is none) or else its own
   "mediaType", and by its shape when neither says.  -1 with
   `invalid_request` when it is neither (a schema 1 manifest, a config).  */
int rt_oci_kind_of (const char *json, size_t len, const char *media_type, enum rt_oci_kind *kind, rt_error **err);

/* The linux/amd64 image manifest of an index: the first one for that
   platform (variant ignored), attestation manifests skipped.  -1 with
   `invalid_request` when the index is malformed, `not_found` when it has
   no linux/amd64 image (the platforms it has named).  */
int rt_oci_index_pick (const char *json, size_t len, struct rt_oci_desc *out, rt_error **err);

/* A manifest's config and layers (rt_oci_manifest_clear frees them).  -1
   with `invalid_request`: not schema 2, a descriptor without a valid digest
   or size, a layer type not supported (foreign or non-distributable
   layers among them), more than RT_OCI_MAX_LAYERS.  */
int rt_oci_manifest_parse (const char *json, size_t len, struct rt_oci_manifest *m, rt_error **err);
void rt_oci_manifest_clear (struct rt_oci_manifest *m);

/* An image config's run settings and diff_ids (rt_oci_config_clear frees
   them).  -1 with `invalid_request`: not linux/amd64, rootfs not "layers",
   a field of the wrong type, @n_layers diff_ids not matching.  */
int rt_oci_config_parse (const char *json, size_t len, size_t n_layers, struct rt_oci_config *c, rt_error **err);
void rt_oci_config_clear (struct rt_oci_config *c);

#endif
