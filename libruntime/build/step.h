/* step.h - running a build's steps in its sandbox, and their cache
   (build/step.c).  */
#ifndef RT_BUILD_STEP_H
#define RT_BUILD_STEP_H

#include "build/build.h"

/* A progress line to the build's log, when it has one.  */
void rt_build_say (struct build *b, const char *fmt, ...) RT_PRINTF (2, 3);
/* Runs @script under sh as root in the build sandbox; failure is the
   build's error, about @what.  */
int rt_build_guest_must (struct build *b, const char *what, const char *script, char *const *args, rt_error **err);
/* The build's "interrupted" error, naming the step it stopped at.  */
int rt_build_interrupted (struct build *b, rt_error **err);
/* rt_build_interrupted when the caller's cancel_fd fired, else 0.  */
int rt_build_check_cancel (struct build *b, rt_error **err);
/* Step @s's cache key, from @parent's (or the base image's id).  */
int rt_build_step_key (struct build *b, const char *parent, struct step *s, char out[65], rt_error **err);
/* The cached layer of @s into s->layer, when it and its file are still
   there.  */
bool rt_build_cache_lookup (struct build *b, struct step *s);
/* The hosts of the apt sources of the base this host built
   (rt_image_base_apt_hosts), for the apt steps' network.  */
int rt_build_apt_hosts (struct build *b, char ***out, rt_error **err);
/* Runs step @i in the sandbox (booted with the steps before @first
   cached), stores its layer and caches it.  */
int rt_build_run_step (struct build *b, size_t first, size_t i, char **apt, rt_error **err);

#endif
