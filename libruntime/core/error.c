/* error.c - the rt_error every fallible function fills.  No header of its
   own: rt_error and rt_error_free are public (include/runtime.h), the
   setters are declared in common/util.h.  */
#include <stdarg.h>
#include <string.h>

#include "common/util.h"

/* Every error is one line (a console's tail, a Python traceback or an
   API's HTML page folded and cut): what a terminal, a log line or a JSON
   client shows whole.  */
#define MSG_MAX 1000
#define HINT_MAX 500

/* *@s folded to one line (rt_text_fold); left as it was when out of
   memory.  */
static void
fold_in_place (char **s, size_t max)
{
  char *folded = *s ? rt_text_fold (*s, max) : NULL;

  if (folded == NULL)
    return;
  free (*s);
  *s = folded;
}

static rt_error oom_error = { ENOMEM, (char *) "internal", (char *) "out of memory", NULL };

int
rt_error_set (rt_error **err, int status, const char *code, const char *fmt, ...)
{
  va_list ap;
  rt_error *e;

  if (status <= 0)
    status = EIO;
  if (err == NULL)
    return -status;
  /* The first error wins: it is the cause, later ones are consequences.  */
  if (*err != NULL)
    return -status;
  e = calloc (1, sizeof (*e));
  if (e == NULL)
    {
      *err = &oom_error;
      return -ENOMEM;
    }
  e->status = status;
  e->code = strdup (code ? code : "internal");
  va_start (ap, fmt);
  if (vasprintf (&e->msg, fmt, ap) < 0)
    e->msg = NULL;
  va_end (ap);
  fold_in_place (&e->msg, MSG_MAX);
  if (e->code == NULL || e->msg == NULL)
    {
      rt_error_free (e);
      *err = &oom_error;
      return -ENOMEM;
    }
  *err = e;
  return -status;
}

int
rt_error_hint (rt_error **err, const char *fmt, ...)
{
  va_list ap;
  char *hint = NULL;

  if (err == NULL || *err == NULL || *err == &oom_error)
    return -EIO;
  va_start (ap, fmt);
  if (vasprintf (&hint, fmt, ap) < 0)
    hint = NULL;
  va_end (ap);
  fold_in_place (&hint, HINT_MAX);
  free ((*err)->hint);
  (*err)->hint = hint;
  return -(*err)->status;
}

int
rt_error_oom (rt_error **err)
{
  return rt_error_set (err, ENOMEM, "internal", "out of memory");
}

void
rt_error_free (rt_error *err)
{
  if (err == NULL || err == &oom_error)
    return;
  free (err->code);
  free (err->msg);
  free (err->hint);
  free (err);
}
