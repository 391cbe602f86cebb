/* text.h - a sandbox's output as JSON text: the guest chooses every byte,
   and JSON strings must be UTF-8.  */
#ifndef RT_SERVE_TEXT_H
#define RT_SERVE_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How much of @s (@n bytes) to send now: all of it but a UTF-8 sequence
   cut short at the end (at most 3 bytes), which the next bytes may
   complete.  */
size_t srv_utf8_complete (const uint8_t *s, size_t n);
/* @s as UTF-8 text, each byte that does not begin a valid sequence as
   U+FFFD; *@valid tells whether none did.  A new string (*@len bytes, NUL
   after), or NULL when out of memory.  */
char *srv_utf8_text (const uint8_t *s, size_t n, size_t *len, bool *valid);

#endif
