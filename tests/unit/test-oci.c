/* test-oci.c - what an image says of itself (image/oci.h): indexes and
   the linux/amd64 pick, manifests' layers and their compression, configs'
   run settings, and the lies and shapes refused.  */
#include <string.h>

#include "common/util.h"
#include "image/oci.h"
#include "tap.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define D3 "sha256:3333333333333333333333333333333333333333333333333333333333333333"
#define DESC(mt, d, size) "{\"mediaType\":\"" mt "\",\"digest\":\"" d "\",\"size\":" #size

static const char *
code_of (rt_error *e)
{
  return e ? e->code : "none";
}

static void
test_kind (void)
{
  static const struct
  {
    const char *json, *header;
    int want; /* a kind, or -1 */
  } cases[] = {
    { "{\"mediaType\":\"" RT_OCI_INDEX "\"}", NULL, RT_OCI_KIND_INDEX },
    { "{}", RT_DOCKER_LIST, RT_OCI_KIND_INDEX },
    { "{\"mediaType\":\"" RT_DOCKER_MANIFEST "\"}", "", RT_OCI_KIND_MANIFEST },
    { "{}", RT_OCI_MANIFEST, RT_OCI_KIND_MANIFEST },
    { "{\"manifests\":[]}", NULL, RT_OCI_KIND_INDEX },
    { "{\"config\":{},\"layers\":[]}", "application/json", RT_OCI_KIND_MANIFEST },
    { "{\"schemaVersion\":1,\"fsLayers\":[]}", NULL, -1 },
    { "{}", "application/vnd.docker.distribution.manifest.v1+prettyjws", -1 },
    { "[1]", NULL, -1 },
    { "{\"mediaType\":\"" RT_OCI_INDEX "\"} x", NULL, -1 },
    { "{'mediaType':1}", NULL, -1 },
    { "{\"mediaType\":3}", NULL, -1 },
  };

  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    {
      enum rt_oci_kind k = (enum rt_oci_kind) 99;
      rt_error *err = NULL;
      int ret = rt_oci_kind_of (cases[i].json, strlen (cases[i].json), cases[i].header, &k, &err);

      if (cases[i].want < 0)
        ok (ret < 0 && strcmp (code_of (err), "invalid_request") == 0, "kind of %s (%s): refused", cases[i].json,
            cases[i].header ? cases[i].header : "no type");
      else
        ok (ret == 0 && (int) k == cases[i].want, "kind of %s (%s): %s", cases[i].json,
            cases[i].header ? cases[i].header : "no type", cases[i].want == RT_OCI_KIND_INDEX ? "index" : "manifest");
      rt_error_free (err);
    }
}

static void
pick (const char *what, const char *json, const char *want_digest, const char *want_code, const char *want_msg)
{
  struct rt_oci_desc d;
  rt_error *err = NULL;
  int ret = rt_oci_index_pick (json, strlen (json), &d, &err);

  if (want_digest)
    ok (ret == 0 && strcmp (d.digest, want_digest) == 0, "%s", what);
  else
    ok (ret < 0 && strcmp (code_of (err), want_code) == 0 && (!want_msg || strstr (err->msg, want_msg)), "%s (%s)",
        what, err ? err->msg : "accepted");
  rt_error_free (err);
}

static void
test_index (void)
{
  pick ("the linux/amd64 entry of a multi-arch index",
        "{\"schemaVersion\":2,\"manifests\":[" DESC (RT_OCI_MANIFEST, D1, 10) ",\"platform\":{\"os\":\"linux\","
        "\"architecture\":\"arm64\",\"variant\":\"v8\"}}," DESC (RT_OCI_MANIFEST, D2, 10) ",\"platform\":{\"os\":"
        "\"linux\",\"architecture\":\"amd64\"}}]}",
        D2, NULL, NULL);
  pick ("attestations skipped (a Docker list's entries too)",
        "{\"schemaVersion\":2,\"mediaType\":\"" RT_DOCKER_LIST "\",\"manifests\":[" DESC (RT_OCI_MANIFEST, D1, 5)
        ",\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"},\"annotations\":{\"vnd.docker.reference.type\":"
        "\"attestation-manifest\"}}," DESC (RT_DOCKER_MANIFEST, D3, 7) ",\"platform\":{\"os\":\"linux\","
        "\"architecture\":\"amd64\"}}]}",
        D3, NULL, NULL);
  pick ("no linux/amd64: not_found, naming what there is",
        "{\"schemaVersion\":2,\"manifests\":[" DESC (RT_OCI_MANIFEST, D1, 10) ",\"platform\":{\"os\":\"linux\","
        "\"architecture\":\"arm64\"}}," DESC (RT_OCI_MANIFEST, D2, 10) ",\"platform\":{\"os\":\"windows\","
        "\"architecture\":\"amd64\"}}]}",
        NULL, "not_found", "(it has linux/arm64, windows/amd64)");
  pick ("an empty index: not_found", "{\"schemaVersion\":2,\"manifests\":[]}", NULL, "not_found", NULL);
  pick ("an index pointing at an index for linux/amd64 is refused",
        "{\"schemaVersion\":2,\"manifests\":[" DESC (RT_OCI_INDEX, D1, 10) ",\"platform\":{\"os\":\"linux\","
        "\"architecture\":\"amd64\"}}]}",
        NULL, "invalid_request", "not an image manifest");
  pick ("a bad digest in any entry", "{\"schemaVersion\":2,\"manifests\":[" DESC (RT_OCI_MANIFEST, "sha256:12", 1) "}]}",
        NULL, "invalid_request", "digest");
  pick ("an upper-case digest", "{\"schemaVersion\":2,\"manifests\":[" DESC (RT_OCI_MANIFEST,
        "sha256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 1) "}]}",
        NULL, "invalid_request", "digest");
  pick ("a negative size", "{\"schemaVersion\":2,\"manifests\":[" DESC (RT_OCI_MANIFEST, D1, -1) "}]}", NULL,
        "invalid_request", "size");
  pick ("a size that is a string", "{\"schemaVersion\":2,\"manifests\":[" DESC (RT_OCI_MANIFEST, D1, "9") "}]}", NULL,
        "invalid_request", "size");
  pick ("a size past int64", "{\"schemaVersion\":2,\"manifests\":[" DESC (RT_OCI_MANIFEST, D1, 99999999999999999999) "}]}",
        NULL, "invalid_request", "size");
  pick ("a platform of numbers", "{\"schemaVersion\":2,\"manifests\":[" DESC (RT_OCI_MANIFEST, D1, 1) ",\"platform\":"
        "{\"os\":1}}]}", NULL, "invalid_request", "platform");
  pick ("schemaVersion 1", "{\"schemaVersion\":1,\"manifests\":[]}", NULL, "invalid_request", "schemaVersion");
  pick ("manifests not a list", "{\"schemaVersion\":2,\"manifests\":{}}", NULL, "invalid_request", "list");
}

static void
test_manifest (void)
{
  static const char good[] = "{\"schemaVersion\":2,\"mediaType\":\"" RT_OCI_MANIFEST "\",\"config\":"
                             DESC ("application/vnd.oci.image.config.v1+json", D1, 100) "},\"layers\":["
                             DESC ("application/vnd.oci.image.layer.v1.tar+gzip", D2, 2000) "},"
                             DESC ("application/vnd.oci.image.layer.v1.tar+zstd", D3, 30) "},"
                             DESC ("application/vnd.docker.image.rootfs.diff.tar.gzip", D1, 40) "},"
                             DESC ("application/vnd.oci.image.layer.v1.tar", D2, 0) "}]}";
  static const struct
  {
    const char *json, *msg;
  } bad[] = {
    { "{\"schemaVersion\":1}", "schemaVersion" },
    { "{\"schemaVersion\":2,\"layers\":[]}", "no config" },
    { "{\"schemaVersion\":2,\"config\":" DESC ("x", D1, 1) "}}", "layers is not a list" },
    { "{\"schemaVersion\":2,\"config\":" DESC ("x", D1, 1) "},\"layers\":[" DESC (
          "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", D2, 1) "}]}",
      "layer 1 is of a type not supported: application/vnd.docker.image.rootfs.foreign.diff.tar.gzip" },
    { "{\"schemaVersion\":2,\"config\":" DESC ("x", D1, 1) "},\"layers\":[" DESC (
          "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", D2, 1) "}]}",
      "not supported" },
    { "{\"schemaVersion\":2,\"config\":" DESC ("x", D1, 1) "},\"layers\":[{\"digest\":\"" D2 "\",\"size\":1}]}",
      "(none)" },
    { "{\"schemaVersion\":2,\"config\":{\"digest\":\"md5:00\",\"size\":1},\"layers\":[]}", "digest" },
    { "{\"schemaVersion\":2,\"config\":" DESC ("x", D1, 1) "},\"layers\":[7]}", "not an object" },
  };
  struct rt_oci_manifest m;
  rt_error *err = NULL;
  char *many;
  size_t len;

  ok (rt_oci_manifest_parse (good, sizeof good - 1, &m, &err) == 0 && m.n_layers == 4 && m.config.size == 100
          && strcmp (m.config.digest, D1) == 0 && strcmp (m.layers[0].digest, D2) == 0 && m.layers[0].size == 2000
          && m.compression[0] == RT_OCI_GZIP && m.compression[1] == RT_OCI_ZSTD && m.compression[2] == RT_OCI_GZIP
          && m.compression[3] == RT_OCI_TAR,
      "a manifest: its config and four layers, gzip, zstd, Docker's gzip and plain tar (%s)",
      err ? err->msg : "read");
  rt_oci_manifest_clear (&m);
  rt_error_free (err);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    {
      err = NULL;
      ok (rt_oci_manifest_parse (bad[i].json, strlen (bad[i].json), &m, &err) < 0 && m.layers == NULL
              && strcmp (code_of (err), "invalid_request") == 0 && strstr (err->msg, bad[i].msg),
          "manifest refused: %s (%s)", bad[i].msg, err ? err->msg : "accepted");
      rt_error_free (err);
    }

  /* RT_OCI_MAX_LAYERS + 1 layers.  */
  many = malloc (64 + (RT_OCI_MAX_LAYERS + 1) * 200);
  len = (size_t) sprintf (many, "{\"schemaVersion\":2,\"config\":" DESC ("x", D1, 1) "},\"layers\":[");
  for (unsigned i = 0; i <= RT_OCI_MAX_LAYERS; i++)
    len += (size_t) sprintf (many + len, "%s" DESC ("application/vnd.oci.image.layer.v1.tar", D2, 1) "}", i ? "," : "");
  len += (size_t) sprintf (many + len, "]}");
  err = NULL;
  ok (rt_oci_manifest_parse (many, len, &m, &err) < 0 && strstr (err->msg, "more than the 256"),
      "257 layers are refused");
  rt_error_free (err);
  free (many);
  err = NULL;
  ok (rt_oci_manifest_parse (good, RT_OCI_MAX_MANIFEST + 1, &m, &err) < 0 && strstr (err->msg, "over 4 MiB"),
      "a manifest over 4 MiB is refused before it is read");
  rt_error_free (err);
}

static void
test_config (void)
{
  static const char good[] = "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":[\"PATH=/usr/bin\","
                             "\"LANG=C.UTF-8\"],\"Entrypoint\":[\"/docker-entrypoint.sh\"],\"Cmd\":[\"python3\"],"
                             "\"WorkingDir\":\"/app\",\"User\":\"1000:1000\",\"Healthcheck\":{\"Test\":[\"CMD-SHELL\","
                             "\"curl -f http://localhost/\"]},\"ExposedPorts\":{\"8000/tcp\":{}}},\"rootfs\":{\"type\":"
                             "\"layers\",\"diff_ids\":[\"" D1 "\",\"" D2 "\"]},\"history\":[]}";
  static const char bare[] = "{\"architecture\":\"amd64\",\"os\":\"linux\",\"rootfs\":{\"type\":\"layers\","
                             "\"diff_ids\":[]}}";
  static const struct
  {
    const char *json, *msg;
  } bad[] = {
    { "{\"architecture\":\"arm64\",\"os\":\"linux\",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}",
      "for linux/arm64, not linux/amd64" },
    { "{\"os\":\"windows\",\"architecture\":\"amd64\"}", "windows/amd64" },
    { "{\"architecture\":\"amd64\",\"os\":\"linux\"}", "rootfs" },
    { "{\"architecture\":\"amd64\",\"os\":\"linux\",\"rootfs\":{\"type\":\"x\",\"diff_ids\":[]}}", "rootfs" },
    { "{\"architecture\":\"amd64\",\"os\":\"linux\",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" D1 "\"]}}",
      "names 1 layers, its manifest 0" },
    { "{\"architecture\":\"amd64\",\"os\":\"linux\",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"x\"]}}",
      "diff_id" },
    { "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":\"A=1\"},\"rootfs\":{\"type\":\"layers\","
      "\"diff_ids\":[]}}",
      "of another type" },
    { "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":[\"A\"]},\"rootfs\":{\"type\":\"layers\","
      "\"diff_ids\":[]}}",
      "K=V" },
    { "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Cmd\":[1]},\"rootfs\":{\"type\":\"layers\","
      "\"diff_ids\":[]}}",
      "something else" },
    { "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Cmd\":[\"a\\u0000b\"]},\"rootfs\":{\"type\":"
      "\"layers\",\"diff_ids\":[]}}",
      "NUL" },
    { "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"User\":0},\"rootfs\":{\"type\":\"layers\","
      "\"diff_ids\":[]}}",
      "of another type" },
    { "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":[],\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}",
      "not an object" },
  };
  struct rt_oci_config c;
  rt_error *err = NULL;

  ok (rt_oci_config_parse (good, sizeof good - 1, 2, &c, &err) == 0 && c.env[0] && strcmp (c.env[1], "LANG=C.UTF-8") == 0
          && c.env[2] == NULL && strcmp (c.entrypoint[0], "/docker-entrypoint.sh") == 0 && strcmp (c.cmd[0], "python3") == 0
          && c.cmd[1] == NULL && strcmp (c.workdir, "/app") == 0 && strcmp (c.user, "1000:1000") == 0
          && strcmp (c.healthcheck[0], "CMD-SHELL") == 0 && c.n_diff_ids == 2 && strcmp (c.diff_ids[1], D2) == 0,
      "a config: env, entrypoint, cmd, workdir, user, healthcheck, diff_ids (%s)", err ? err->msg : "read");
  rt_oci_config_clear (&c);
  rt_error_free (err);
  err = NULL;
  ok (rt_oci_config_parse (bare, sizeof bare - 1, 0, &c, &err) == 0 && c.env && c.env[0] == NULL && c.cmd == NULL
          && c.entrypoint == NULL && c.workdir == NULL && c.user == NULL && c.healthcheck == NULL,
      "a config without run settings: an empty env, nothing else");
  rt_oci_config_clear (&c);
  rt_error_free (err);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    {
      err = NULL;
      ok (rt_oci_config_parse (bad[i].json, strlen (bad[i].json), 0, &c, &err) < 0 && c.env == NULL
              && strcmp (code_of (err), "invalid_request") == 0 && strstr (err->msg, bad[i].msg),
          "config refused: %s (%s)", bad[i].msg, err ? err->msg : "accepted");
      rt_error_free (err);
    }
}

int
main (void)
{
  ok (rt_oci_digest_valid (D1) && !rt_oci_digest_valid ("sha256:") && !rt_oci_digest_valid (D1 "0")
          && !rt_oci_digest_valid ("sha384:1111111111111111111111111111111111111111111111111111111111111111"),
      "digests: sha256 and sha512 in lower-case hex, of their length");
  test_kind ();
  test_index ();
  test_manifest ();
  test_config ();
  return tap_done ();
}
