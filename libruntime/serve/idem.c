/* idem.c - Idempotency-Key answers kept on disk (see idem.h).  */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "serve/idem.h"
#include "serve/sweep.h"

struct srv_idem
{
  char *dir;
  char **busy; /* ids being answered now */
  size_t nbusy, cap;
};

void
srv_idem_sweep (struct srv_idem *s)
{
  srv_sweep_dir (s->dir, time (NULL), SRV_IDEM_KEEP_S, 0, NULL, NULL);
}

int
srv_idem_open (const char *dir, struct srv_idem **out, rt_error **err)
{
  struct srv_idem *s;

  if (rt_mkdir_p (dir, 0700, err) < 0)
    return -1;
  s = calloc (1, sizeof (*s));
  if (s == NULL || (s->dir = strdup (dir)) == NULL)
    {
      free (s);
      return rt_error_oom (err);
    }
  *out = s;
  return 0;
}

void
srv_idem_free (struct srv_idem *s)
{
  if (s == NULL)
    return;
  for (size_t i = 0; i < s->nbusy; i++)
    free (s->busy[i]);
  free (s->busy);
  free (s->dir);
  free (s);
}

char *
srv_idem_id (const char *tenant, const char *method, const char *path, const char *key)
{
  EVP_MD_CTX *md = EVP_MD_CTX_new ();
  unsigned char h[32];
  char *hex = malloc (65);

  if (md == NULL || hex == NULL)
    {
      EVP_MD_CTX_free (md);
      free (hex);
      return NULL;
    }
  /* NUL-separated: no two (tenant, method, path, key) give the same input.  */
  EVP_DigestInit_ex (md, EVP_sha256 (), NULL);
  EVP_DigestUpdate (md, tenant, strlen (tenant) + 1);
  EVP_DigestUpdate (md, method, strlen (method) + 1);
  EVP_DigestUpdate (md, path, strlen (path) + 1);
  EVP_DigestUpdate (md, key, strlen (key));
  EVP_DigestFinal_ex (md, h, NULL);
  EVP_MD_CTX_free (md);
  rt_hex (h, 32, hex);
  return hex;
}

static ssize_t
busy_index (struct srv_idem *s, const char *id)
{
  for (size_t i = 0; i < s->nbusy; i++)
    if (strcmp (s->busy[i], id) == 0)
      return (ssize_t) i;
  return -1;
}

enum srv_idem_state
srv_idem_begin (struct srv_idem *s, const char *id, const char *body_sha, int *status, char **ctype, char **body,
                size_t *len)
{
  cleanup_free char *path = rt_strdup_printf ("%s/%s.json", s->dir, id), *text = NULL;
  cleanup_json json_object *o = NULL;
  struct stat st;
  size_t n;

  if (busy_index (s, id) >= 0)
    return SRV_IDEM_BUSY;
  if (path && stat (path, &st) == 0 && time (NULL) - st.st_mtime <= SRV_IDEM_KEEP_S
      && rt_read_file (path, &text, &n, NULL) == 0 && (o = json_tokener_parse (text)))
    {
      const char *sha = rt_json_str (o, "bodySha256"), *b = rt_json_str (o, "body");

      if (sha == NULL || strcmp (sha, body_sha) != 0)
        return SRV_IDEM_CONFLICT;
      *status = (int) rt_json_i64 (o, "status");
      *ctype = rt_json_str (o, "contentType") ? strdup (rt_json_str (o, "contentType")) : NULL;
      *body = strdup (b ? b : "");
      *len = *body ? strlen (*body) : 0;
      return SRV_IDEM_REPLAY;
    }
  if (s->nbusy == s->cap)
    {
      size_t cap = s->cap ? 2 * s->cap : 16;
      char **v = realloc (s->busy, cap * sizeof (*v));
      if (v == NULL)
        return SRV_IDEM_NEW; /* answered, not kept: a retry runs again */
      s->busy = v;
      s->cap = cap;
    }
  if ((s->busy[s->nbusy] = strdup (id)))
    s->nbusy++;
  return SRV_IDEM_NEW;
}

bool
srv_idem_keepable (int status, const char *ctype, size_t len)
{
  return status < 500 && status != 409 && status != 429 && ctype && strcmp (ctype, "application/json") == 0
         && len <= SRV_IDEM_MAX_KEEP;
}

void
srv_idem_store (struct srv_idem *s, const char *id, const char *body_sha, int status, const char *ctype,
                const void *body, size_t len)
{
  cleanup_free char *path = rt_strdup_printf ("%s/%s.json", s->dir, id);
  cleanup_json json_object *o = json_object_new_object ();
  const char *text;

  json_object_object_add (o, "bodySha256", json_object_new_string (body_sha));
  json_object_object_add (o, "status", json_object_new_int (status));
  json_object_object_add (o, "contentType", json_object_new_string (ctype ? ctype : "application/json"));
  json_object_object_add (o, "body", json_object_new_string_len (body, (int) len));
  text = json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN);
  if (path)
    rt_write_file_atomic (path, text, strlen (text), 0600, NULL);
}

void
srv_idem_finish (struct srv_idem *s, const char *id, const char *body_sha, bool keep, int status, const char *ctype,
                 const void *body, size_t len)
{
  ssize_t i = busy_index (s, id);

  if (i >= 0)
    {
      free (s->busy[i]);
      s->busy[i] = s->busy[--s->nbusy];
    }
  if (keep)
    srv_idem_store (s, id, body_sha, status, ctype, body, len);
}
