/* dockerfile.h - a Dockerfile read as BuildKit's parser reads it: parser
   directives (escape), comments, line continuations, instructions with
   their --flags, JSON ("exec") or shell form, heredocs; and the shell-like
   words of ENV, LABEL, ARG, COPY… with quotes and $VAR/${VAR:-word}
   expansion.  Pure functions over strings (no file, no image), for the
   Dockerfile builder and a fuzzer; what an instruction means, and which
   are refused, is the builder's.  */
#ifndef RT_BUILD_DOCKERFILE_H
#define RT_BUILD_DOCKERFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime.h"

/* The most a Dockerfile may be, and hold: past them it is refused, with
   the limit, before anything runs.  */
#define RT_DF_MAX_BYTES (8u << 20)
#define RT_DF_MAX_INSTRUCTIONS 100000u
#define RT_DF_MAX_FLAGS 32u
#define RT_DF_MAX_HEREDOCS 16u
#define RT_DF_MAX_NESTING 32u

struct rt_df_flag
{
  char *name;  /* "from" of --from=stage */
  char *value; /* "stage"; NULL for a bare --link */
};

struct rt_df_heredoc
{
  char *name;      /* "EOF" of <<EOF */
  char *body;      /* its lines, each with its "\n" */
  bool strip_tabs; /* <<-EOF: leading tabs were taken off each line */
  bool expand;     /* unquoted: $VAR in the body is expanded */
};

struct rt_df_instr
{
  char *keyword; /* upper case: "FROM", "RUN", "COPY"… as written otherwise */
  unsigned line; /* its first line, from 1 */
  struct rt_df_flag *flags;
  size_t n_flags;
  char *args;  /* what follows the flags, its lines joined */
  char **json; /* the args as a JSON array of strings (exec form), or NULL */
  size_t n_json;
  struct rt_df_heredoc *heredocs;
  size_t n_heredocs;
};

struct rt_dockerfile
{
  char escape; /* '\\', or '`' by "# escape=`" */
  struct rt_df_instr *instr;
  size_t n;
};

/* Reads @len bytes of @text into @df (cleared first; rt_dockerfile_clear
   frees it).  0, or -1 with `invalid_request` and "Dockerfile line N: …".  */
int rt_dockerfile_parse (const char *text, size_t len, struct rt_dockerfile *df, rt_error **err);
void rt_dockerfile_clear (struct rt_dockerfile *df);

/* A variable's value for expansion, or NULL when it is not set.  */
typedef const char *(*rt_df_lookup) (void *data, const char *name);

/* The words of @args as a shell reads them, without running anything:
   split on blanks outside quotes, quotes removed ('…' literal, "…" with
   \\ \" \$ escapes), @escape escaping the next character, and — when
   @lookup is not NULL — $NAME, ${NAME}, ${NAME:-word}, ${NAME-word},
   ${NAME:+word}, ${NAME+word} and ${NAME:?msg} expanded (unset names are
   empty).  A NULL-ended array in *@out (free each, then it), its length
   in *@n.  0, or -1 with `invalid_request` (an unclosed quote or brace,
   ${NAME:?msg} of an unset NAME).  */
int rt_df_words (const char *args, char escape, rt_df_lookup lookup, void *data, char ***out, size_t *n,
                 rt_error **err);

/* @text (an unquoted heredoc's body for COPY/ADD) with $NAME and ${…}
   expanded and nothing else: no splitting, quotes and escapes kept but
   "\$", a literal "$".  The new string in *@out; 0, or -1 as
   rt_df_words.  */
int rt_df_expand_text (const char *text, rt_df_lookup lookup, void *data, char **out, rt_error **err);

void rt_df_words_free (char **words);

#endif
