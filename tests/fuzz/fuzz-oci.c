/* fuzz-oci.c - what an image says of itself (image/oci.h), as a hostile
 * registry, `docker save` tarball or OCI layout sends it.
 *
 * Input: byte 0 picks the reader (0 kind, 1 index, 2 manifest, 3 config
 * with byte 1 layers), the rest is the JSON.
 *
 * Checked: a refusal is invalid_request (not_found for an index without
 * linux/amd64) and leaves nothing allocated; what is accepted holds only
 * valid digests, sizes >= 0, at most RT_OCI_MAX_LAYERS layers each of a
 * known compression, an Env of K=V strings, as many diff_ids as layers.
 */
#include <string.h>

#include "common/util.h"
#include "fuzz.h"
#include "image/oci.h"

static void
check_refusal (rt_error *err, bool not_found_too)
{
  FUZZ_CHECK (err != NULL);
  FUZZ_CHECK (strcmp (err->code, "invalid_request") == 0 || (not_found_too && strcmp (err->code, "not_found") == 0));
  rt_error_free (err);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  const char *json = (const char *) data + 2;
  size_t len = size > 2 ? size - 2 : 0;
  rt_error *err = NULL;

  if (size < 2)
    return 0;
  switch (data[0] % 4)
    {
    case 0:
      {
        enum rt_oci_kind k;

        if (rt_oci_kind_of (json, len, NULL, &k, &err) < 0)
          check_refusal (err, false);
        else
          FUZZ_CHECK (k == RT_OCI_KIND_INDEX || k == RT_OCI_KIND_MANIFEST);
        break;
      }
    case 1:
      {
        struct rt_oci_desc d;

        if (rt_oci_index_pick (json, len, &d, &err) < 0)
          check_refusal (err, true);
        else
          FUZZ_CHECK (rt_oci_digest_valid (d.digest) && d.size >= 0
                      && (strcmp (d.media_type, RT_OCI_MANIFEST) == 0 || strcmp (d.media_type, RT_DOCKER_MANIFEST) == 0));
        break;
      }
    case 2:
      {
        struct rt_oci_manifest m;

        if (rt_oci_manifest_parse (json, len, &m, &err) < 0)
          {
            check_refusal (err, false);
            FUZZ_CHECK (m.layers == NULL && m.n_layers == 0);
            break;
          }
        FUZZ_CHECK (rt_oci_digest_valid (m.config.digest) && m.config.size >= 0);
        FUZZ_CHECK (m.n_layers <= RT_OCI_MAX_LAYERS);
        for (size_t i = 0; i < m.n_layers; i++)
          FUZZ_CHECK (rt_oci_digest_valid (m.layers[i].digest) && m.layers[i].size >= 0 && m.compression[i] <= RT_OCI_ZSTD);
        rt_oci_manifest_clear (&m);
        break;
      }
    default:
      {
        struct rt_oci_config c;

        if (rt_oci_config_parse (json, len, data[1] % 4, &c, &err) < 0)
          {
            check_refusal (err, false);
            FUZZ_CHECK (c.env == NULL && c.diff_ids == NULL);
            break;
          }
        FUZZ_CHECK (c.env != NULL && c.n_diff_ids == data[1] % 4u);
        for (char **e = c.env; *e; e++)
          FUZZ_CHECK (strchr (*e, '=') != NULL && **e != '=');
        for (size_t i = 0; i < c.n_diff_ids; i++)
          FUZZ_CHECK (rt_oci_digest_valid (c.diff_ids[i]));
        rt_oci_config_clear (&c);
      }
    }
  return 0;
}
