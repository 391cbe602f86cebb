/* saved.c - a VM saved to disk (saved.h).  */
#include "snapshot/saved.h"
