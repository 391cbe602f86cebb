/* fuzz-dockerfile.c - the Dockerfile reader (build/dockerfile.h), which
 * reads what a user or an API client sends as their build's Dockerfile.
 *
 * Input: a Dockerfile.
 *
 * Checked: a refusal is invalid_request and leaves nothing; an accepted
 * one's instructions have upper-case letters for a keyword, lines that
 * grow and lie within the input, at most RT_DF_MAX_FLAGS flags with
 * names, args with no line break but a heredoc's, an exec form only for
 * args that start with "[", heredoc bodies of whole lines; every
 * instruction's args split into words (with variables expanded, and
 * without) or are refused as invalid_request, never anything else.
 */
#include <ctype.h>
#include <string.h>

#include "build/dockerfile.h"
#include "common/util.h"
#include "fuzz.h"

static const char *
lookup (void *data, const char *name)
{
  (void) data;
  return name[0] == 'E' ? "" : name[0] == 'S' ? "a b \"c" : name[0] == 'U' ? NULL : "v";
}

static void
check_words (const char *args, char escape, rt_df_lookup l)
{
  char **w = NULL;
  size_t n = 0;
  rt_error *err = NULL;

  if (rt_df_words (args, escape, l, NULL, &w, &n, &err) < 0)
    {
      FUZZ_CHECK (w == NULL && err && strcmp (err->code, "invalid_request") == 0);
      rt_error_free (err);
      return;
    }
  FUZZ_CHECK (w != NULL && w[n] == NULL);
  for (size_t i = 0; i < n; i++)
    FUZZ_CHECK (w[i] != NULL);
  rt_df_words_free (w);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct rt_dockerfile df;
  rt_error *err = NULL;
  unsigned lines = 1, last = 0;

  for (size_t i = 0; i < size; i++)
    lines += data[i] == '\n';
  if (rt_dockerfile_parse ((const char *) data, size, &df, &err) < 0)
    {
      FUZZ_CHECK (err && strcmp (err->code, "invalid_request") == 0 && df.n == 0 && df.instr == NULL);
      rt_error_free (err);
      return 0;
    }
  FUZZ_CHECK (df.escape == '\\' || df.escape == '`');
  for (size_t i = 0; i < df.n; i++)
    {
      const struct rt_df_instr *in = &df.instr[i];
      char *text = NULL;

      FUZZ_CHECK (in->keyword && *in->keyword);
      for (const char *c = in->keyword; *c; c++)
        FUZZ_CHECK (isupper ((unsigned char) *c));
      FUZZ_CHECK (in->line > last && in->line <= lines);
      last = in->line;
      FUZZ_CHECK (in->n_flags <= RT_DF_MAX_FLAGS && in->n_heredocs <= RT_DF_MAX_HEREDOCS);
      for (size_t f = 0; f < in->n_flags; f++)
        FUZZ_CHECK (in->flags[f].name && *in->flags[f].name);
      FUZZ_CHECK (in->args && strchr (in->args, '\n') == NULL);
      FUZZ_CHECK (in->json == NULL || in->args[0] == '[');
      for (size_t h = 0; h < in->n_heredocs; h++)
        {
          size_t n = strlen (in->heredocs[h].body);

          FUZZ_CHECK (n == 0 || in->heredocs[h].body[n - 1] == '\n');
          if (rt_df_expand_text (in->heredocs[h].body, lookup, NULL, &text, NULL) == 0)
            FUZZ_CHECK (text != NULL);
          free (text);
          text = NULL;
        }
      check_words (in->args, df.escape, NULL);
      check_words (in->args, df.escape, lookup);
    }
  rt_dockerfile_clear (&df);
  return 0;
}
