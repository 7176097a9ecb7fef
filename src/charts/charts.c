/* What the chart-drawing commands share. */
#include <dlfcn.h>

#include <cairo.h>

#include "rok/charts.h"

void rok_charts_release(void) {
  cairo_debug_reset_static_data();
  /* cairo loads fontconfig; rok does not link it, so it is called by name. */
  void (*fc_fini)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "FcFini");
  if (fc_fini != NULL)
    fc_fini();
}
