/* test-dockerfile.c - reading Dockerfiles (build/dockerfile.h): each
   instruction's keyword, line, flags, args, exec form and heredocs; the
   words of ENV/COPY with quotes and ${…}; and what is refused, with its
   line.  */
#include <stdlib.h>
#include <string.h>

#include "build/dockerfile.h"
#include "common/util.h"
#include "tap.h"

/* A Dockerfile's instructions, one a line, as
   "LINE KEYWORD [--flag=value…] |args|" plus " json=a,b" and
   " heredoc=NAME:body" when there are.  */
static char *
show (const struct rt_dockerfile *df)
{
  char *out = strdup ("");

  for (size_t i = 0; i < df->n; i++)
    {
      const struct rt_df_instr *in = &df->instr[i];
      char *s = rt_strdup_printf ("%s%s%u %s", out, i ? "\n" : "", in->line, in->keyword), *t;

      free (out);
      for (size_t f = 0; f < in->n_flags; f++, free (s), s = t)
        t = rt_strdup_printf ("%s --%s%s%s", s, in->flags[f].name, in->flags[f].value ? "=" : "",
                              in->flags[f].value ? in->flags[f].value : "");
      t = rt_strdup_printf ("%s |%s|", s, in->args);
      free (s);
      s = t;
      for (size_t j = 0; j < in->n_json; j++, free (s), s = t)
        t = rt_strdup_printf ("%s%s%s", s, j ? "," : " json=", in->json[j]);
      if (in->json && in->n_json == 0)
        {
          t = rt_strdup_printf ("%s json=", s);
          free (s);
          s = t;
        }
      for (size_t h = 0; h < in->n_heredocs; h++, free (s), s = t)
        t = rt_strdup_printf ("%s heredoc=%s%s%s:%s", s, in->heredocs[h].strip_tabs ? "-" : "",
                              in->heredocs[h].expand ? "" : "'", in->heredocs[h].name, in->heredocs[h].body);
      out = s;
    }
  return out;
}

static void
parses (const char *what, const char *text, const char *want)
{
  struct rt_dockerfile df;
  rt_error *err = NULL;
  int ret = rt_dockerfile_parse (text, strlen (text), &df, &err);
  cleanup_free char *got = ret == 0 ? show (&df) : NULL;

  ok (ret == 0 && strcmp (got, want) == 0, "%s", what);
  if (ret < 0 || strcmp (got, want) != 0)
    printf ("# got:  %s\n# want: %s\n", got ? got : err->msg, want);
  rt_error_free (err);
  rt_dockerfile_clear (&df);
}

static void
refused (const char *what, const char *text, size_t len, const char *want)
{
  struct rt_dockerfile df;
  rt_error *err = NULL;
  int ret = rt_dockerfile_parse (text, len, &df, &err);

  ok (ret < 0 && err && strcmp (err->code, "invalid_request") == 0 && strstr (err->msg, want) && df.n == 0
          && df.instr == NULL,
      "%s: refused, '%s'", what, want);
  if (!(ret < 0 && err && strstr (err->msg, want)))
    printf ("# got: %s\n", err ? err->msg : "accepted");
  rt_error_free (err);
  rt_dockerfile_clear (&df);
}

static void
test_parse (void)
{
  parses ("instructions, any case, blank lines and comments between",
          "FROM debian:12\n\n# a comment\n  run echo hi\nCmd [\"python3\", \"-m\", \"http.server\"]\n",
          "1 FROM |debian:12|\n4 RUN |echo hi|\n5 CMD |[\"python3\", \"-m\", \"http.server\"]| json=python3,-m,http.server");
  parses ("continuation lines, with comments and blank lines in them dropped",
          "RUN apt-get update && \\\n    # why\n\n    apt-get install -y make \\  \n    && true\nENV A=1\n",
          "1 RUN |apt-get update &&     apt-get install -y make     && true|\n6 ENV |A=1|");
  parses ("CRLF lines", "FROM scratch\r\nCOPY a \\\r\n  /b\r\n", "1 FROM |scratch|\n2 COPY |a   /b|");
  parses ("flags, with and without a value, lower-cased names",
          "COPY --from=build --chown=1000:1000 --Link src/ /app/\nRUN --mount=type=cache,target=/root/.cache pip install x\n",
          "1 COPY --from=build --chown=1000:1000 --link |src/ /app/|\n2 RUN --mount=type=cache,target=/root/.cache |pip install x|");
  parses ("FROM … AS name, ARG before FROM", "ARG V=3.12\nFROM python:${V}-slim AS base\n",
          "1 ARG |V=3.12|\n2 FROM |python:${V}-slim AS base|");
  parses ("not JSON (single quotes, trailing words, numbers) is the shell form",
          "CMD ['a']\nCMD [\"a\"] b\nENTRYPOINT [1]\nSHELL [\"/bin/bash\", \"-c\"]\nCMD []\n",
          "1 CMD |['a']|\n2 CMD |[\"a\"] b|\n3 ENTRYPOINT |[1]|\n4 SHELL |[\"/bin/bash\", \"-c\"]| json=/bin/bash,-c\n5 CMD |[]| json=");
  parses ("a heredoc for RUN", "RUN <<EOF\napt-get update\napt-get install -y x\nEOF\nWORKDIR /app\n",
          "1 RUN |<<EOF| heredoc=EOF:apt-get update\napt-get install -y x\n\n5 WORKDIR |/app|");
  parses ("heredocs: quoted (no expansion), <<- (tabs off), two on a line, COPY's",
          "RUN <<-'A' cat <<B\n\tx $V\n\tA\ny\nB\nCOPY <<conf /etc/app.conf\nk=$V\nconf\n",
          "1 RUN |<<-'A' cat <<B| heredoc=-'A:x $V\n heredoc=B:y\n\n6 COPY |<<conf /etc/app.conf| heredoc=conf:k=$V\n");
  parses ("not a heredoc: in a word, in JSON, on another instruction, a << without a name, in quotes",
          "RUN echo a<<EOF\nRUN [\"sh\", \"-c\", \"cat <<EOF\"]\nENV X=<<EOF\nRUN echo << 1\nRUN echo \"a <<EOF\" 'b <<E'\n",
          "1 RUN |echo a<<EOF|\n2 RUN |[\"sh\", \"-c\", \"cat <<EOF\"]| json=sh,-c,cat <<EOF\n3 ENV |X=<<EOF|\n4 RUN |echo << 1|\n5 RUN |echo \"a <<EOF\" 'b <<E'|");
  parses ("the escape directive: ` continues lines, \\ is ordinary",
          "# escape=`\nFROM mcr.microsoft.com/windows\nRUN dir c:\\ `\n  && echo\n",
          "2 FROM |mcr.microsoft.com/windows|\n3 RUN |dir c:\\   && echo|");
  parses ("directives end at the first other line (a later escape= is a comment)",
          "# syntax=docker/dockerfile:1\n# a comment\n# escape=`\nRUN a \\\n b\n", "4 RUN |a  b|");
  parses ("an escape at the very end: the line is what came", "RUN a \\", "1 RUN |a|");
  parses ("an empty Dockerfile", "", "");
  parses ("a lone escape and blank lines join the next instruction (its line the first)", "  \\\n\n \\\nFROM a\n", "1 FROM |a|");
  parses ("only comments", "# a\n\n   # b\n", "");
}

static void
test_refused (void)
{
  static const char nul[] = "FROM a\0RUN b\n";
  char *big;

  refused ("an instruction that is not a word", "FR0M x\n", strlen ("FR0M x\n"), "line 1: 'FR0M' is not an instruction");
  refused ("… on its line", "FROM a\n\nRUN b\n12 c\n", strlen ("FROM a\n\nRUN b\n12 c\n"), "line 4:");
  refused ("a heredoc never ended", "FROM a\nRUN <<EOF\necho\n", strlen ("FROM a\nRUN <<EOF\necho\n"),
           "line 2: the heredoc EOF is not ended");
  refused ("a heredoc name with an open quote", "RUN <<'EOF\nx\nEOF\n", strlen ("RUN <<'EOF\nx\nEOF\n"), "no closing '");
  refused ("a bare --", "COPY -- a b\n", strlen ("COPY -- a b\n"), "a flag needs a name");
  refused ("a NUL byte", nul, sizeof nul - 1, "NUL");
  refused ("two escape directives", "# escape=`\n# escape=\\\n", strlen ("# escape=`\n# escape=\\\n"), "twice");
  refused ("an escape that is neither \\ nor `", "# escape=x\nFROM a\n", strlen ("# escape=x\nFROM a\n"),
           "must be \\ or `");
  big = malloc (RT_DF_MAX_BYTES + 1);
  memset (big, '\n', RT_DF_MAX_BYTES + 1);
  refused ("over 8 MiB", big, RT_DF_MAX_BYTES + 1, "over 8 MiB");
  free (big);
  {
    char flags[2048] = "COPY";

    for (int i = 0; i <= (int) RT_DF_MAX_FLAGS; i++)
      strcat (flags, " --a=b");
    strcat (flags, " x y\n");
    refused ("too many flags", flags, strlen (flags), "more than 32 flags");
  }
}

/* 1 MiB of RUN lines: read, each its own instruction.  */
static void
test_large (void)
{
  size_t n = (1u << 20) / 16, len = 0;
  char *text = malloc (n * 16 + 1);
  struct rt_dockerfile df;

  for (size_t i = 0; i < n; i++)
    len += (size_t) sprintf (text + len, "RUN echo %06zu\n", i % 1000000);
  ok (rt_dockerfile_parse (text, len, &df, NULL) == 0 && df.n == n && df.instr[n - 1].line == n,
      "1 MiB of RUN lines: %zu instructions", n);
  rt_dockerfile_clear (&df);
  free (text);
}

static const char *
vars (void *data, const char *name)
{
  (void) data;
  if (strcmp (name, "V") == 0)
    return "3.12";
  if (strcmp (name, "EMPTY") == 0)
    return "";
  if (strcmp (name, "SP") == 0)
    return "a b";
  return NULL;
}

static void
words (const char *in, rt_df_lookup lookup, const char *want)
{
  char **w = NULL;
  size_t n = 0;
  rt_error *err = NULL;
  char *got = NULL;

  if (rt_df_words (in, '\\', lookup, NULL, &w, &n, &err) == 0)
    {
      got = strdup ("");
      for (size_t i = 0; i < n; i++)
        {
          char *t = rt_strdup_printf ("%s[%s]", got, w[i]);

          free (got);
          got = t;
        }
    }
  ok (got && strcmp (got, want) == 0, "words of %s: %s", in, want);
  if (!got || strcmp (got, want) != 0)
    printf ("# got: %s\n", got ? got : err->msg);
  free (got);
  rt_df_words_free (w);
  rt_error_free (err);
}

static void
word_refused (const char *in, const char *want)
{
  char **w = NULL;
  size_t n = 0;
  rt_error *err = NULL;
  int ret = rt_df_words (in, '\\', vars, NULL, &w, &n, &err);

  ok (ret < 0 && w == NULL && err && strstr (err->msg, want), "words of %s: refused, '%s'", in, want);
  rt_df_words_free (w);
  rt_error_free (err);
}

static void
test_words (void)
{
  cleanup_free char *text = NULL;

  words ("A=1 B=\"two words\" C='it''s' D=x\\ y", NULL, "[A=1][B=two words][C=its][D=x y]");
  words ("  a\t b  ", NULL, "[a][b]");
  words ("", NULL, "");
  words ("$V ${V} x${V}y", NULL, "[$V][${V}][x${V}y]");
  words ("$V ${V} x${V}y \"$V\" '$V' \\$V", vars, "[3.12][3.12][x3.12y][3.12][$V][$V]");
  words ("${NO:-d} ${EMPTY:-d} ${EMPTY-d} ${NO-d}", vars, "[d][d][][d]");
  words ("${V:+set} ${EMPTY:+set} ${EMPTY+set} ${NO+set}", vars, "[set][][set][]");
  words ("${NO:-two words} ${NO:-${V}}", vars, "[two words][3.12]");
  words ("$SP", vars, "[a b]");
  words ("a$ $1 \"x\\\"y\" \"\\n\"", vars, "[a$][$1][x\"y][\\n]");
  word_refused ("\"open", "\" is not closed");
  word_refused ("'open", "' is not closed");
  word_refused ("${V", "no closing }");
  word_refused ("${}", "without a variable name");
  word_refused ("${V/x/y}", "only :- - :+ + :? follow a name");
  word_refused ("${NO:?must be set}", "NO: must be set");
  word_refused ("${EMPTY:?}", "EMPTY: is not set");
  {
    /* 20,000 levels overflowed a 1 MiB stack; 32 are taken, 33 not.  */
    size_t n = 20000;
    char *deep = malloc (n * 6 + n + 1), *p = deep;

    for (size_t i = 0; i < n; i++)
      p += sprintf (p, "${a:-");
    memset (p, '}', n);
    p[n] = '\0';
    {
      char **w = NULL;
      size_t nw = 0;
      rt_error *err = NULL;

      ok (rt_df_words (deep, '\\', vars, NULL, &w, &nw, &err) < 0 && w == NULL && err
              && strstr (err->msg, "nested more than 32 deep"),
          "words of 20,000 nested ${a:-…}: refused, not a stack overflow");
      rt_error_free (err);
    }
    p = deep;
    for (size_t i = 0; i < 32; i++)
      p += sprintf (p, "${a:-");
    memset (p, '}', 32);
    p[32] = '\0';
    {
      char **w = NULL;
      size_t nw = 0;

      ok (rt_df_words (deep, '\\', vars, NULL, &w, &nw, NULL) == 0 && nw == 1 && strcmp (w[0], "") == 0,
          "… 32 nested are taken");
      rt_df_words_free (w);
    }
    free (deep);
  }

  ok (rt_df_expand_text ("k=$V '${V}' \"x\" \\$V \\n ${NO:-d}\n", vars, NULL, &text, NULL) == 0
          && strcmp (text, "k=3.12 '3.12' \"x\" $V \\n d\n") == 0,
      "a heredoc's text: variables expanded, quotes and other escapes kept");
  free (text);
  text = NULL;
  ok (rt_df_expand_text ("${V", vars, NULL, &text, NULL) < 0 && text == NULL, "… an unclosed ${ refused");
}

int
main (void)
{
  test_parse ();
  test_refused ();
  test_large ();
  test_words ();
  return tap_done ();
}
