/* queue.c - image builds in turn between tenants (see queue.h).  */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build/queue.h"

static struct rt_build_queue_tenant *
find (struct rt_build_queue *q, const char *tenant, size_t *at)
{
  for (size_t i = 0; i < q->n; i++)
    if (strcmp (q->t[i].name, tenant ? tenant : "") == 0)
      {
        if (at)
          *at = i;
        return &q->t[i];
      }
  return NULL;
}

/* Tenant @i has nothing queued nor running: out of the turn order, the
   turn staying with the tenant that had it.  */
static void
drop_if_idle (struct rt_build_queue *q, size_t i)
{
  if (q->t[i].queued || q->t[i].running)
    return;
  memmove (&q->t[i], &q->t[i + 1], (q->n - i - 1) * sizeof q->t[0]);
  q->n--;
  if (q->next > i)
    q->next--;
  if (q->next >= q->n)
    q->next = 0;
}

int
rt_build_queue_push (struct rt_build_queue *q, const char *tenant, uint64_t id)
{
  struct rt_build_queue_tenant *t = find (q, tenant, NULL);

  if (t == NULL)
    {
      if (q->n == q->cap)
        {
          size_t cap = q->cap ? 2 * q->cap : 8;
          struct rt_build_queue_tenant *v = realloc (q->t, cap * sizeof *v);
          if (v == NULL)
            return -ENOMEM;
          q->t = v;
          q->cap = cap;
        }
      /* A newcomer's turn comes after every tenant already waiting.  */
      t = &q->t[q->n++];
      memset (t, 0, sizeof *t);
      snprintf (t->name, sizeof t->name, "%s", tenant ? tenant : "");
    }
  if (t->queued + t->running >= RT_BUILD_QUEUE_PER_TENANT)
    return -EBUSY;
  t->ids[t->queued++] = id;
  return 0;
}

int
rt_build_queue_pop (struct rt_build_queue *q, uint64_t *id, const char **tenant)
{
  for (size_t k = 0; k < q->n; k++)
    {
      size_t i = (q->next + k) % q->n;
      struct rt_build_queue_tenant *t = &q->t[i];
      if (t->queued == 0)
        continue;
      *id = t->ids[0];
      memmove (&t->ids[0], &t->ids[1], (t->queued - 1) * sizeof t->ids[0]);
      t->queued--;
      t->running++;
      q->next = (i + 1) % q->n;
      if (tenant)
        *tenant = t->name;
      return 1;
    }
  return 0;
}

void
rt_build_queue_done (struct rt_build_queue *q, const char *tenant)
{
  size_t i;
  struct rt_build_queue_tenant *t = find (q, tenant, &i);

  if (t == NULL || t->running == 0)
    return;
  t->running--;
  drop_if_idle (q, i);
}

void
rt_build_queue_cancel (struct rt_build_queue *q, const char *tenant, uint64_t id)
{
  size_t i;
  struct rt_build_queue_tenant *t = find (q, tenant, &i);

  for (unsigned k = 0; t && k < t->queued; k++)
    if (t->ids[k] == id)
      {
        memmove (&t->ids[k], &t->ids[k + 1], (t->queued - k - 1) * sizeof t->ids[0]);
        t->queued--;
        drop_if_idle (q, i);
        return;
      }
}

void
rt_build_queue_free (struct rt_build_queue *q)
{
  free (q->t);
  memset (q, 0, sizeof *q);
}
