/* A queue pop for a thread whose next message usually comes within
 * microseconds: asleep by then, it would take tens of microseconds to wake
 * (an idle processor of a virtual machine), every time. */
#include "rok/core.h"

gpointer rok_async_queue_pop_soon(GAsyncQueue *queue, gint64 spin_us) {
  gint64 until = g_get_monotonic_time() + spin_us;
  do {
    gpointer msg = g_async_queue_try_pop(queue);
    if (msg != NULL)
      return msg;
    g_thread_yield();
  } while (g_get_monotonic_time() < until);
  return g_async_queue_pop(queue);
}
