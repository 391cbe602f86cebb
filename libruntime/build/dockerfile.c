/* dockerfile.c - reading a Dockerfile (dockerfile.h), as BuildKit's
   frontend parser does: directives only before anything else, a comment
   only where a line starts, continuation lines with comments and blank
   lines inside them dropped, heredocs read after the line that opens
   them.  */
#include <ctype.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "build/dockerfile.h"
#include "common/strutil.h"
#include "common/util.h"

/* A growing string.  */
struct sb
{
  char *s;
  size_t len, cap;
  bool oom;
};

static void
sb_add (struct sb *b, const char *s, size_t n)
{
  if (b->oom)
    return;
  if (b->len + n + 1 > b->cap)
    {
      size_t cap = b->cap ? b->cap : 64;
      char *p;

      while (cap < b->len + n + 1)
        cap *= 2;
      p = realloc (b->s, cap);
      if (p == NULL)
        {
          b->oom = true;
          return;
        }
      b->s = p;
      b->cap = cap;
    }
  memcpy (b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

static void
sb_char (struct sb *b, char c)
{
  sb_add (b, &c, 1);
}

/* The string made, "" when nothing was added; NULL when out of memory.  */
static char *
sb_take (struct sb *b)
{
  char *s = b->oom ? NULL : b->s ? b->s : strdup ("");

  if (b->oom)
    free (b->s);
  memset (b, 0, sizeof *b);
  return s;
}

/* An error at a line of the Dockerfile.  */
#define at_line(err, line, fmt, ...)                                                                                   \
  rt_error_set (err, EINVAL, "invalid_request", "Dockerfile line %u: " fmt, line, ##__VA_ARGS__)

struct reader
{
  const char *p, *end;
  unsigned line; /* of the line last read */
};

/* The next physical line without its "\n" (and "\r"), or false at the
   end.  */
static bool
next_line (struct reader *r, const char **s, size_t *n)
{
  const char *nl;

  if (r->p >= r->end)
    return false;
  nl = memchr (r->p, '\n', (size_t) (r->end - r->p));
  *s = r->p;
  *n = (size_t) ((nl ? nl : r->end) - r->p);
  r->p = nl ? nl + 1 : r->end;
  if (*n && (*s)[*n - 1] == '\r')
    (*n)--;
  r->line++;
  return true;
}

static size_t
skip_blank (const char *s, size_t n, size_t i)
{
  while (i < n && (s[i] == ' ' || s[i] == '\t'))
    i++;
  return i;
}

static bool
blank_or_comment (const char *s, size_t n)
{
  size_t i = skip_blank (s, n, 0);

  return i == n || s[i] == '#';
}

/* Whether the line ends in the escape character (blanks after it
   allowed): the next line continues it.  *@n is cut before it.  */
static bool
continues (const char *s, size_t *n, char escape)
{
  size_t k = *n;

  while (k > 0 && (s[k - 1] == ' ' || s[k - 1] == '\t'))
    k--;
  if (k == 0 || s[k - 1] != escape)
    return false;
  *n = k - 1;
  return true;
}

/* "# escape=`" and the other directives, at the very top only.  */
static int
read_directives (struct reader *r, char *escape, rt_error **err)
{
  bool seen_escape = false;

  for (;;)
    {
      struct reader save = *r;
      const char *s;
      size_t n, i, k, v;
      char key[16];

      if (!next_line (r, &s, &n))
        return 0;
      i = skip_blank (s, n, 0);
      if (i >= n || s[i] != '#')
        {
          *r = save;
          return 0;
        }
      i = skip_blank (s, n, i + 1);
      for (k = i; k < n && (isalpha ((unsigned char) s[k])); k++)
        ;
      v = skip_blank (s, n, k);
      if (k == i || k - i >= sizeof key || v >= n || s[v] != '=')
        {
          *r = save; /* an ordinary comment: directives end here */
          return 0;
        }
      memcpy (key, s + i, k - i);
      key[k - i] = '\0';
      for (char *c = key; *c; c++)
        *c = (char) tolower ((unsigned char) *c);
      v = skip_blank (s, n, v + 1);
      while (n > v && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
      if (strcmp (key, "escape") == 0)
        {
          if (seen_escape)
            return at_line (err, r->line, "the escape directive is given twice");
          if (n - v != 1 || (s[v] != '\\' && s[v] != '`'))
            return at_line (err, r->line, "the escape character must be \\ or `");
          *escape = s[v];
          seen_escape = true;
        }
      else if (strcmp (key, "syntax") != 0 && strcmp (key, "check") != 0)
        {
          *r = save; /* not a directive BuildKit knows: a comment */
          return 0;
        }
    }
}

/* One more zeroed element at the end of *@v, of *@n elements of @size, or
   NULL when out of memory (*@v unchanged).  */
static void *
append (void *v, size_t *n, size_t size)
{
  char **pv = v, *grown = realloc (*pv, (*n + 1) * size);

  if (grown == NULL)
    return NULL;
  *pv = grown;
  memset (grown + *n * size, 0, size);
  return grown + (*n)++ * size;
}

static void
instr_clear (struct rt_df_instr *in)
{
  free (in->keyword);
  for (size_t i = 0; i < in->n_flags; i++)
    {
      free (in->flags[i].name);
      free (in->flags[i].value);
    }
  free (in->flags);
  free (in->args);
  for (size_t i = 0; i < in->n_json; i++)
    free (in->json[i]);
  free (in->json);
  for (size_t i = 0; i < in->n_heredocs; i++)
    {
      free (in->heredocs[i].name);
      free (in->heredocs[i].body);
    }
  free (in->heredocs);
  memset (in, 0, sizeof *in);
}

void
rt_dockerfile_clear (struct rt_dockerfile *df)
{
  for (size_t i = 0; i < df->n; i++)
    instr_clear (&df->instr[i]);
  free (df->instr);
  memset (df, 0, sizeof *df);
}

/* Leading "--name=value" and "--name" words, as BuildKit takes them off
   every instruction (the builder refuses those an instruction has not).  */
static int
read_flags (struct rt_df_instr *in, const char **rest, rt_error **err)
{
  const char *p = *rest;

  while (p[0] == '-' && p[1] == '-')
    {
      const char *end = p + strcspn (p, " \t"), *eq = memchr (p, '=', (size_t) (end - p));
      const char *name = p + 2;
      size_t name_len = (size_t) ((eq ? eq : end) - name);
      struct rt_df_flag *f;

      if (name_len == 0)
        return at_line (err, in->line, "a flag needs a name after --");
      if (in->n_flags == RT_DF_MAX_FLAGS)
        return at_line (err, in->line, "more than %u flags", RT_DF_MAX_FLAGS);
      f = append (&in->flags, &in->n_flags, sizeof *f);
      if (f == NULL)
        return rt_error_oom (err);
      f->name = strndup (name, name_len);
      f->value = eq ? strndup (eq + 1, (size_t) (end - eq - 1)) : NULL;
      if (f->name == NULL || (eq && f->value == NULL))
        return rt_error_oom (err);
      for (char *c = f->name; *c; c++)
        *c = (char) tolower ((unsigned char) *c);
      p = end;
      while (*p == ' ' || *p == '\t')
        p++;
    }
  *rest = p;
  return 0;
}

/* The exec form: a JSON array of strings and nothing else.  Not one is
   the shell form, as Docker has it.  */
static int
read_json (struct rt_df_instr *in, rt_error **err)
{
  json_tokener *tok;
  json_object *a;
  bool whole;
  size_t n;

  if (in->args[0] != '[')
    return 0;
  /* Strict (no 'single quotes'), and the whole of the args.  */
  tok = json_tokener_new ();
  if (tok == NULL)
    return rt_error_oom (err);
  json_tokener_set_flags (tok, JSON_TOKENER_STRICT);
  a = json_tokener_parse_ex (tok, in->args, (int) strlen (in->args));
  whole = json_tokener_get_error (tok) == json_tokener_success && (size_t) json_tokener_get_parse_end (tok) == strlen (in->args);
  json_tokener_free (tok);
  if (a == NULL || !whole || !json_object_is_type (a, json_type_array))
    {
      json_object_put (a);
      return 0;
    }
  n = json_object_array_length (a);
  for (size_t i = 0; i < n; i++)
    if (!json_object_is_type (json_object_array_get_idx (a, i), json_type_string))
      {
        json_object_put (a);
        return 0;
      }
  in->json = calloc (n + 1, sizeof *in->json);
  if (in->json == NULL)
    {
      json_object_put (a);
      return rt_error_oom (err);
    }
  for (size_t i = 0; i < n; i++)
    {
      json_object *s = json_object_array_get_idx (a, i);

      in->json[i] = strndup (json_object_get_string (s), (size_t) json_object_get_string_len (s));
      if (in->json[i] == NULL)
        {
          json_object_put (a);
          return rt_error_oom (err);
        }
      in->n_json++;
    }
  json_object_put (a);
  return 0;
}

static bool
heredoc_keyword (const char *k)
{
  return strcmp (k, "RUN") == 0 || strcmp (k, "COPY") == 0 || strcmp (k, "ADD") == 0;
}

/* The next "<<" at or after @p outside quotes (a "<<EOF" in a quoted
   string opens nothing, as BuildKit lexes words first), or NULL; *@quote
   is the quote @p is in, kept from one call to the next, so the args are
   read once however many "<<" they hold.  */
static const char *
unquoted_heredoc (const char *p, char *quote)
{
  for (const char *c = p; *c; c++)
    {
      if (*quote)
        {
          if (*c == '\\' && *quote == '"' && c[1])
            c++;
          else if (*c == *quote)
            *quote = 0;
        }
      else if (*c == '\\' && c[1])
        c++;
      else if (*c == '\'' || *c == '"')
        *quote = *c;
      else if (c[0] == '<' && c[1] == '<')
        return c;
    }
  return NULL;
}

/* The heredocs the args open (words "<<EOF", "<<-EOF", "<<'EOF'",
   "<<\"EOF\""), their bodies read from @r.  */
static int
read_heredocs (struct rt_df_instr *in, struct reader *r, rt_error **err)
{
  const char *p = in->args;
  char in_quote = 0;

  while ((p = unquoted_heredoc (p, &in_quote)) != NULL)
    {
      const char *w = p + 2, *name;
      bool strip = false, quoted = false;
      char quote = 0;
      size_t name_len;
      struct rt_df_heredoc *h;
      struct sb body = { 0 };
      bool closed = false;

      /* Only at a word's start.  */
      if (p > in->args && p[-1] != ' ' && p[-1] != '\t')
        {
          p += 2;
          continue;
        }
      if (*w == '-')
        strip = true, w++;
      if (*w == '\'' || *w == '"')
        quote = *w++, quoted = true;
      name = w;
      if (!(isalpha ((unsigned char) *w) || *w == '_'))
        {
          p = w;
          continue;
        }
      while (isalnum ((unsigned char) *w) || *w == '_')
        w++;
      name_len = (size_t) (w - name);
      if (quote && *w++ != quote)
        return at_line (err, in->line, "the heredoc's name %.*s has no closing %c", (int) name_len, name, quote);
      p = w;
      if (in->n_heredocs == RT_DF_MAX_HEREDOCS)
        return at_line (err, in->line, "more than %u heredocs", RT_DF_MAX_HEREDOCS);
      h = append (&in->heredocs, &in->n_heredocs, sizeof *h);
      if (h == NULL)
        return rt_error_oom (err);
      *h = (struct rt_df_heredoc) { .name = strndup (name, name_len), .strip_tabs = strip, .expand = !quoted };
      if (h->name == NULL)
        return rt_error_oom (err);
      for (const char *s; !closed && next_line (r, &s, &name_len);)
        {
          size_t n = name_len, i = 0;

          if (strip)
            while (i < n && s[i] == '\t')
              i++;
          if (n - i == strlen (h->name) && memcmp (s + i, h->name, n - i) == 0)
            closed = true;
          else
            {
              sb_add (&body, s + i, n - i);
              sb_char (&body, '\n');
            }
        }
      h->body = sb_take (&body);
      if (h->body == NULL)
        return rt_error_oom (err);
      if (!closed)
        return at_line (err, in->line, "the heredoc %s is not ended (a line of just %s)", h->name, h->name);
    }
  return 0;
}

/* One instruction from its joined lines.  */
static int
read_instr (struct rt_df_instr *in, const char *text, struct reader *r, rt_error **err)
{
  size_t k = strcspn (text, " \t");
  const char *rest;
  int ret;

  in->keyword = strndup (text, k);
  if (in->keyword == NULL)
    return rt_error_oom (err);
  for (char *c = in->keyword; *c; c++)
    {
      if (!isalpha ((unsigned char) *c))
        return at_line (err, in->line, "'%.40s' is not an instruction", in->keyword);
      *c = (char) toupper ((unsigned char) *c);
    }
  rest = text + skip_blank (text, strlen (text), k);
  ret = read_flags (in, &rest, err);
  if (ret < 0)
    return ret;
  in->args = strdup (rest);
  if (in->args == NULL)
    return rt_error_oom (err);
  for (size_t n = strlen (in->args); n > 0 && (in->args[n - 1] == ' ' || in->args[n - 1] == '\t'); n--)
    in->args[n - 1] = '\0';
  ret = read_json (in, err);
  if (ret == 0 && heredoc_keyword (in->keyword) && in->json == NULL)
    ret = read_heredocs (in, r, err);
  return ret;
}

int
rt_dockerfile_parse (const char *text, size_t len, struct rt_dockerfile *df, rt_error **err)
{
  struct reader r = { .p = text, .end = text + len };
  const char *s;
  size_t n;
  int ret;

  memset (df, 0, sizeof *df);
  df->escape = '\\';
  if (len > RT_DF_MAX_BYTES)
    return rt_error_set (err, EFBIG, "invalid_request", "the Dockerfile is over %u MiB", RT_DF_MAX_BYTES >> 20);
  if (memchr (text, '\0', len))
    return rt_error_set (err, EINVAL, "invalid_request", "the Dockerfile has a NUL byte: not a text file");
  ret = read_directives (&r, &df->escape, err);
  if (ret < 0)
    return ret;
  while (next_line (&r, &s, &n))
    {
      struct sb joined = { 0 };
      cleanup_free char *line = NULL;
      struct rt_df_instr *in;
      unsigned first = r.line;

      if (blank_or_comment (s, n))
        continue;
      /* Its continuation lines: comments and blank lines among them are
         dropped, as BuildKit does.  */
      for (;;)
        {
          bool more = continues (s, &n, df->escape);

          sb_add (&joined, s, n);
          if (!more)
            break;
          do
            more = next_line (&r, &s, &n);
          while (more && blank_or_comment (s, n));
          if (!more)
            break; /* an escape on the last line: what came is the line */
        }
      line = sb_take (&joined);
      if (line == NULL)
        {
          rt_dockerfile_clear (df);
          return rt_error_oom (err);
        }
      /* "  \" then blank lines: nothing was said.  */
      if (line[skip_blank (line, strlen (line), 0)] == '\0')
        continue;
      if (df->n == RT_DF_MAX_INSTRUCTIONS)
        {
          rt_dockerfile_clear (df);
          return at_line (err, first, "more than %u instructions", RT_DF_MAX_INSTRUCTIONS);
        }
      if (df->n % 64 == 0)
        {
          in = realloc (df->instr, (df->n + 64) * sizeof *in);
          if (in == NULL)
            {
              rt_dockerfile_clear (df);
              return rt_error_oom (err);
            }
          df->instr = in;
        }
      in = &df->instr[df->n++];
      memset (in, 0, sizeof *in);
      in->line = first;
      ret = read_instr (in, line + skip_blank (line, strlen (line), 0), &r, err);
      if (ret < 0)
        {
          rt_dockerfile_clear (df);
          return ret;
        }
    }
  return 0;
}

struct lex
{
  const char *p;
  char escape;
  rt_df_lookup lookup;
  void *data;
  bool words; /* take quotes off (and split, when .split); else expand only */
  bool split; /* end a word at a blank: not inside ${…:-word} */
  unsigned depth; /* of ${…:-${…}} nesting: bounded, each level is a
                     call (a deep one overflowed a worker's stack) */
  rt_error **err;
};

static bool
name_char (char c, bool first)
{
  return isalpha ((unsigned char) c) || c == '_' || (!first && isdigit ((unsigned char) c));
}

static int lex_word (struct lex *l, struct sb *out, const char *stop);

/* After a "$": the variable's value (or a ${…} form's) added to @out.  */
static int
lex_var (struct lex *l, struct sb *out)
{
  const char *name;
  size_t n;
  const char *val;
  cleanup_free char *key = NULL;

  if (*l->p == '{')
    {
      char op[3] = { 0 };
      struct sb word = { 0 };
      cleanup_free char *w = NULL;
      int ret;

      l->p++;
      name = l->p;
      while (name_char (*l->p, l->p == name))
        l->p++;
      n = (size_t) (l->p - name);
      if (n == 0)
        return rt_error_set (l->err, EINVAL, "invalid_request", "a ${…} without a variable name");
      key = strndup (name, n);
      if (key == NULL)
        return rt_error_oom (l->err);
      if (*l->p == '\0')
        return rt_error_set (l->err, EINVAL, "invalid_request", "${%s has no closing }", key);
      if (*l->p == ':' && strchr ("-+?", l->p[1]) && l->p[1])
        op[0] = ':', op[1] = l->p[1], l->p += 2;
      else if (*l->p && strchr ("-+?", *l->p))
        op[0] = *l->p++;
      else if (*l->p != '}')
        return rt_error_set (l->err, EINVAL, "invalid_request", "${%s…}: only :- - :+ + :? follow a name", key);
      if (op[0])
        {
          bool split = l->split;

          if (l->depth == RT_DF_MAX_NESTING)
            return rt_error_set (l->err, EINVAL, "invalid_request", "${…} nested more than %u deep",
                                 RT_DF_MAX_NESTING);
          l->split = false;
          l->depth++;
          ret = lex_word (l, &word, "}");
          l->depth--;
          l->split = split;
          if (ret < 0)
            {
              free (sb_take (&word));
              return ret;
            }
        }
      w = sb_take (&word);
      if (*l->p != '}')
        return rt_error_set (l->err, EINVAL, "invalid_request", "${%s… has no closing }", key);
      l->p++;
      if (w == NULL)
        return rt_error_oom (l->err);
      val = l->lookup (l->data, key);
      {
        bool colon = op[0] == ':';
        char o = colon ? op[1] : op[0];
        bool set = val != NULL && (!colon || *val);

        if (o == '-' && !set)
          val = w;
        else if (o == '+')
          val = set ? w : "";
        else if (o == '?' && !set)
          return rt_error_set (l->err, EINVAL, "invalid_request", "%s: %s", key, *w ? w : "is not set");
      }
      if (val)
        sb_add (out, val, strlen (val));
      return 0;
    }
  name = l->p;
  while (name_char (*l->p, l->p == name))
    l->p++;
  n = (size_t) (l->p - name);
  if (n == 0)
    {
      sb_char (out, '$'); /* a "$" not before a name stays */
      return 0;
    }
  key = strndup (name, n);
  if (key == NULL)
    return rt_error_oom (l->err);
  val = l->lookup (l->data, key);
  if (val)
    sb_add (out, val, strlen (val));
  return 0;
}

/* One word to @out, up to a blank (words mode) or a character of @stop
   outside quotes, or the end.  */
static int
lex_word (struct lex *l, struct sb *out, const char *stop)
{
  int ret;

  while (*l->p && !strchr (stop, *l->p) && !(l->split && (*l->p == ' ' || *l->p == '\t')))
    {
      char c = *l->p;

      if (c == l->escape && l->p[1])
        {
          /* In text, only "\$" is an escape (a "$" kept); others stay.  */
          if (!l->words && l->p[1] != '$')
            sb_char (out, c);
          sb_char (out, l->p[1]);
          l->p += 2;
        }
      else if (c == '\'' && l->words)
        {
          const char *end = strchr (l->p + 1, '\'');

          if (end == NULL)
            return rt_error_set (l->err, EINVAL, "invalid_request", "a ' is not closed");
          sb_add (out, l->p + 1, (size_t) (end - l->p - 1));
          l->p = end + 1;
        }
      else if (c == '"' && l->words)
        {
          l->p++;
          while (*l->p && *l->p != '"')
            {
              if (*l->p == l->escape && l->p[1] && strchr ("\"$`\\", l->p[1]))
                {
                  sb_char (out, l->p[1]);
                  l->p += 2;
                }
              else if (*l->p == '$' && l->lookup)
                {
                  l->p++;
                  ret = lex_var (l, out);
                  if (ret < 0)
                    return ret;
                }
              else
                sb_char (out, *l->p++);
            }
          if (*l->p != '"')
            return rt_error_set (l->err, EINVAL, "invalid_request", "a \" is not closed");
          l->p++;
        }
      else if (c == '$' && l->lookup)
        {
          l->p++;
          ret = lex_var (l, out);
          if (ret < 0)
            return ret;
        }
      else
        sb_char (out, *l->p++);
    }
  return out->oom ? rt_error_oom (l->err) : 0;
}

void
rt_df_words_free (char **words)
{
  cleanup_strvp (&words);
}

int
rt_df_words (const char *args, char escape, rt_df_lookup lookup, void *data, char ***out, size_t *n,
             rt_error **err)
{
  struct lex l
      = { .p = args, .escape = escape, .lookup = lookup, .data = data, .words = true, .split = true, .err = err };
  char **v = NULL;
  size_t len = 0;

  *out = NULL;
  *n = 0;
  for (;;)
    {
      struct sb w = { 0 };
      char *word, **grown;
      int ret;

      while (*l.p == ' ' || *l.p == '\t')
        l.p++;
      if (*l.p == '\0')
        break;
      ret = lex_word (&l, &w, "");
      word = sb_take (&w);
      if (ret < 0 || word == NULL)
        {
          free (word);
          rt_df_words_free (v);
          return ret < 0 ? ret : rt_error_oom (err);
        }
      grown = realloc (v, (len + 2) * sizeof *v);
      if (grown == NULL)
        {
          free (word);
          rt_df_words_free (v);
          return rt_error_oom (err);
        }
      v = grown;
      v[len++] = word;
      v[len] = NULL;
    }
  if (v == NULL && (v = calloc (1, sizeof *v)) == NULL)
    return rt_error_oom (err);
  *out = v;
  *n = len;
  return 0;
}

int
rt_df_expand_text (const char *text, rt_df_lookup lookup, void *data, char **out, rt_error **err)
{
  struct lex l = { .p = text, .escape = '\\', .lookup = lookup, .data = data, .err = err };
  struct sb b = { 0 };
  int ret = lex_word (&l, &b, "");

  *out = sb_take (&b);
  if (ret < 0 || *out == NULL)
    {
      free (*out);
      *out = NULL;
      return ret < 0 ? ret : rt_error_oom (err);
    }
  return 0;
}
