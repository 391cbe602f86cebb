/* extract.h - layers extracted onto a root (image/extract.c).  */
#ifndef RT_IMAGE_EXTRACT_H
#define RT_IMAGE_EXTRACT_H

#include "core/context.h"

/* Extracts the layer file @layer over @root (a realpath, so it holds no
   symlink).  Entry names are checked by image/layer.h, then prefixed
   with @root; libarchive refuses the rest on the disk (symlinks on the
   way, ".." in link targets).  @upper: a layer above the first, whose
   whiteouts and opaque directories hide what is below.  */
int rt_image_extract_layer (const char *root, const char *layer, bool upper, rt_error **err);

#endif
