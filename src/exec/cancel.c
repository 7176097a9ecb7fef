/* The cancellation flag of a run: set from any thread (a signal watch's),
 * seen by the runner through the hook it attaches. */
#include "runner-private.h"

struct _RokExecCancel {
  GMutex lock; /* guards the hook; held while it runs, so detaching waits for it */
  gint set;    /* atomic */
  gint signo;  /* atomic: the first trigger's */
  RokExecCancelHook hook;
  gpointer data;
};

RokExecCancel *rok_exec_cancel_new(void) {
  RokExecCancel *cancel = g_new0(RokExecCancel, 1);
  g_mutex_init(&cancel->lock);
  return cancel;
}

void rok_exec_cancel_free(RokExecCancel *cancel) {
  if (cancel == NULL)
    return;
  g_mutex_clear(&cancel->lock);
  g_free(cancel);
}

void rok_exec_cancel_trigger(RokExecCancel *cancel, int signo) {
  g_mutex_lock(&cancel->lock);
  gboolean first = g_atomic_int_compare_and_exchange(&cancel->set, 0, 1);
  if (first)
    g_atomic_int_set(&cancel->signo, signo);
  if (first && cancel->hook != NULL)
    cancel->hook(signo, cancel->data);
  g_mutex_unlock(&cancel->lock);
}

gboolean rok_exec_cancel_is_set(RokExecCancel *cancel) {
  return g_atomic_int_get(&cancel->set) != 0;
}

int rok_exec_cancel_signal(RokExecCancel *cancel) {
  return g_atomic_int_get(&cancel->signo);
}

void exec_cancel_attach(RokExecCancel *cancel, RokExecCancelHook hook, gpointer data) {
  g_mutex_lock(&cancel->lock);
  cancel->hook = hook;
  cancel->data = data;
  if (g_atomic_int_get(&cancel->set))
    hook(g_atomic_int_get(&cancel->signo), data);
  g_mutex_unlock(&cancel->lock);
}

void exec_cancel_detach(RokExecCancel *cancel) {
  g_mutex_lock(&cancel->lock);
  cancel->hook = NULL;
  cancel->data = NULL;
  g_mutex_unlock(&cancel->lock);
}
