/* fuzz-image-ref.c - image references (image/ref.h), which a pull reads
 * from a user, a Dockerfile's FROM and an API client.
 *
 * Input: the reference's bytes (a NUL ends it early).
 *
 * Checked: an accepted reference has a registry and a path with no
 * upper-case letter, no empty part and no "..", a tag or a digest, and a
 * name of at most 255 bytes; its normal form parses again to itself (so a
 * stored name means one image); a refusal is invalid_request and leaves
 * nothing allocated; the loopback test never reads past the registry.
 */
#include <string.h>

#include "common/util.h"
#include "fuzz.h"
#include "image/ref.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *s = strndup ((const char *) data, size);
  struct rt_image_ref ref, again;
  rt_error *err = NULL;
  char *norm, *norm2;

  if (s == NULL)
    return 0;
  if (rt_image_ref_parse (s, &ref, &err) < 0)
    {
      FUZZ_CHECK (err && strcmp (err->code, "invalid_request") == 0);
      FUZZ_CHECK (ref.domain == NULL && ref.path == NULL && ref.tag == NULL && ref.digest == NULL);
      rt_error_free (err);
      free (s);
      return 0;
    }
  FUZZ_CHECK (err == NULL);
  FUZZ_CHECK (ref.domain && *ref.domain && ref.path && *ref.path);
  FUZZ_CHECK (ref.tag || ref.digest);
  FUZZ_CHECK (strcspn (ref.path, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == strlen (ref.path));
  FUZZ_CHECK (strstr (ref.path, "..") == NULL && strstr (ref.path, "//") == NULL);
  FUZZ_CHECK (ref.path[0] != '/' && ref.path[strlen (ref.path) - 1] != '/');
  FUZZ_CHECK (strlen (ref.domain) + 1 + strlen (ref.path) <= RT_IMAGE_REF_NAME_MAX);
  FUZZ_CHECK (strchr (ref.domain, '/') == NULL);
  (void) rt_image_ref_loopback (&ref);
  FUZZ_CHECK (rt_image_ref_api_host (&ref) != NULL && rt_image_ref_manifest_key (&ref) != NULL);
  norm = rt_image_ref_string (&ref);
  FUZZ_CHECK (norm != NULL);
  FUZZ_CHECK (rt_image_ref_parse (norm, &again, NULL) == 0);
  norm2 = rt_image_ref_string (&again);
  FUZZ_CHECK (norm2 && strcmp (norm, norm2) == 0);
  FUZZ_CHECK (strcmp (again.domain, ref.domain) == 0 && strcmp (again.path, ref.path) == 0);
  free (norm);
  free (norm2);
  rt_image_ref_clear (&again);
  rt_image_ref_clear (&ref);
  free (s);
  return 0;
}
