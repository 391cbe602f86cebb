/* build.h - what `runtime image build` works on: the build and its steps
   (build/build.c runs it, build/plan.c plans it, build/step.c runs its
   steps).  */
#ifndef RT_BUILD_BUILD_H
#define RT_BUILD_BUILD_H

#include <stdlib.h>

#include "sandbox/create.h"
#include "sandbox/handle.h"

/* Where the build works in the guest: base/ (a bind of /), then per step
   u<i> (its upper dir), w<i> (overlayfs's work dir), r<i> (the merged
   root it runs in).  */
#define WORK "/run/rtb"

enum step_kind
{
  STEP_FILE,
  STEP_APT,
  STEP_PIP,
  STEP_NPM,
  STEP_RUN,
};

struct step
{
  enum step_kind kind;
  char **words; /* packages; for run the command; for file SRC, DST */
  char *text;   /* shown and hashed */
  char key[65];
  char layer[65]; /* its layer once known */
  bool cached;
};

struct build
{
  rt_context *ctx;
  const rt_build_opts *o;
  struct step *steps;
  size_t n;
  char **env; /* base env + build env */
  char *workdir;
  char *stage; /* the recipe's files, copied (build/plan.c), or NULL */
  char *base_id;
  json_object *base_layers;
  int log_fd;
  rt_sandbox *sb;
  const char *name; /* the image's, for progress lines */
  size_t at;        /* the step running, or n before the first */
};

/* A NULL-terminated vector with room for @n strings.  */
static inline char **
strv_new (size_t n)
{
  return calloc (n + 1, sizeof (char *));
}

/* The local driver (public/driver.h): these do what include/runtime.h
   says of their rt_ names, on this machine.  */
int rt_local_image_build (rt_context *ctx, const rt_build_opts *opts, char **id, rt_error **err);

#endif
