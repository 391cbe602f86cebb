/* fuzz.h - what every target in tests/fuzz defines, and how it reports a
 * broken property.
 *
 * A target is one LLVMFuzzerTestOneInput.  With -Dfuzz=true and clang it
 * is built into a libFuzzer program; always, with fuzz-main.c, into a
 * replay program that runs the target's corpus (tests/fuzz/corpus/<target>/)
 * in `meson test`.  A
 * property that does not hold aborts: libFuzzer saves the input, the replay
 * test fails.  The targets and fuzz-main.c have no header of their own: a
 * target defines only what this one declares, fuzz-main.c only main.
 */
#ifndef RT_FUZZ_H
#define RT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                                               \
  do                                                                                                                   \
    {                                                                                                                  \
      if (!(cond))                                                                                                     \
        {                                                                                                              \
          fprintf (stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                                    \
          abort ();                                                                                                    \
        }                                                                                                              \
    }                                                                                                                  \
  while (0)

#endif
