/* The dependency tracker: one step of the schedule. An action is issued
 * when every action it depends on has completed, on its stream's thread,
 * in the stream's order, one at a time per stream; an SSD leg may also
 * start beside others on its stream where the schedule does not make it
 * wait for them (the stream's lanes, ROK_SSD_LANES), and a d2h or h2d leg
 * be primed while the ones before it are checked; a free runs at once, where the action it waited for
 * ended; a staged SSD write begins on the I/O backend's thread, which
 * submits its requests without a hand-off. The thread that ends an action
 * (a stream's, or the I/O backend's for an SSD leg) marks it done and
 * issues what that made ready, under the tracker's lock; the compute
 * thread runs its own next action at once when its last one made it
 * ready. A hand-off through another thread
 * instead cost two wake-ups per kernel, and while copies ran on the 2
 * processors of the development VM each took 7-11 us rather than 1-3
 * (dispatch_s 5.6-8.7 ms per step of validate-gpt's rows that offload,
 * 1.4-2.8 for keep; now 0.6-4.0 and 0.2-0.3). A d2h leg's copies are
 * enqueued as it is issued (runner_d2h_prime): by the compute thread
 * before its next kernel, where a kernel's end made it ready, as the
 * simulator queues it; every d2h leg made ready is issued, though the
 * stream's one thread waits for them and checks them in turn; so are the
 * h2d legs (runner_h2d_prime). The step's
 * thread waits for the step to be over. Each stream's thread runs what it is
 * given and times it on the monotonic clock. */
#ifdef ROK_WITH_OPENCL

#include <time.h>

#include "runner-private.h"
#include "rok/core.h"

gboolean runner_failed(Runner *r) {
  return g_atomic_int_get(&r->failed) != 0;
}

void runner_fail(Runner *r, GError *error) {
  g_mutex_lock(&r->error_lock);
  if (r->error == NULL)
    r->error = error;
  else
    g_error_free(error);
  g_atomic_int_set(&r->failed, 1);
  g_mutex_unlock(&r->error_lock);
  runner_gate_wake(r);
  /* Wake every leg waiting for a slot or for I/O not yet issued. */
  if (r->staging != NULL)
    rok_staging_cancel(r->staging);
  if (r->host_pool != NULL)
    rok_staging_cancel(r->host_pool);
  if (r->store != NULL)
    rok_store_cancel(r->store);
}

static gboolean take_error(Runner *r, GError **error) {
  g_mutex_lock(&r->error_lock);
  g_propagate_error(error, r->error != NULL ? g_error_copy(r->error)
                                            : g_error_new_literal(ROK_ERROR, ROK_ERROR_DEVICE, "the run failed"));
  g_mutex_unlock(&r->error_lock);
  return FALSE;
}

/* ---- the streams' threads ---- */

/* Communication between GPUs that one device cannot perform: a wait of
 * its modelled duration (end_s - start_s) to the clock. Sleeps overshoot
 * by tens of microseconds to milliseconds (timer slack, a busy VM), more
 * than a tensor-parallel collective lasts: sleep until 200 us before the
 * end, then spin. Cancellation is checked every millisecond. */
gboolean runner_comm_placeholder(Runner *r, guint id, GError **error) {
  const RokAction *a = runner_action(&r->prog, id);
  gint64 until = r->rec[id].start_ns + (a->end_ns - a->start_ns);
  (void)error;
  for (gint64 left; !runner_failed(r) && (left = until - rok_host_now_ns()) > 0;) {
    if (left > 200000) {
      struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)MIN(left - 200000, 1000000)};
      nanosleep(&ts, NULL);
    }
  }
  return TRUE;
}

static guint track_done(Runner *r, guint id, gboolean take);

static gboolean exec_action(Runner *r, guint id, gboolean *deferred, GError **error) {
  switch (runner_action(&r->prog, id)->stream) {
  case ROK_STREAM_COMPUTE:
    return runner_compute_action(r, id, error);
  case ROK_STREAM_D2H:
    return run_d2h_leg(r, id, error);
  case ROK_STREAM_H2D:
    return run_h2d_leg(r, id, error);
  case ROK_STREAM_NVME_WRITE:
    return runner_nvme_write_leg(r, id, deferred, error);
  case ROK_STREAM_COMM:
  case ROK_STREAM_P2P:
    return runner_comm_placeholder(r, id, error);
  default:
    return runner_nvme_read_leg(r, id, deferred, error);
  }
}

void runner_leg_done(Runner *r, guint id, GError *error) {
  runner_leg_done_at(r, id, rok_host_now_ns(), error);
}

void runner_leg_done_at(Runner *r, guint id, gint64 end_ns, GError *error) {
  r->rec[id].end_ns = end_ns;
  if (error != NULL)
    runner_fail(r, error);
  track_done(r, id, FALSE);
}

/* The compute stream's next action, when another thread's action made it
 * ready, usually comes a few microseconds after its thread reported the
 * last one: it looks for it a while before it sleeps (woken, it took ~30
 * us per action on the development VM). */
static gpointer next_work(Runner *r, RokStream stream) {
  return stream == ROK_STREAM_COMPUTE ? rok_async_queue_pop_soon(r->work[stream], ROK_COMPUTE_SPIN_US)
                                      : g_async_queue_pop(r->work[stream]);
}

/* Run a task between steps; report its end to the step's thread. */
static void run_task(Runner *r, guint task) {
  GError *error = NULL;
  if (!runner_compute_special(r, task, &error))
    runner_fail(r, error);
  g_async_queue_push(r->completions, runner_msg(RUN_MSG_TASK));
}

/* The weakest of what the stream threads got, for the report. */
static void note_wake(Runner *r, RokHostWake wake) {
  for (gint seen = g_atomic_int_get(&r->stream_wake); (gint)wake < seen; seen = g_atomic_int_get(&r->stream_wake))
    if (g_atomic_int_compare_and_exchange(&r->stream_wake, seen, (gint)wake))
      return;
}

gpointer runner_worker_thread(gpointer data) {
  RunnerWorker *w = data;
  Runner *r = w->r;
  gboolean compute = w->stream == ROK_STREAM_COMPUTE;
  /* On a CPU device a stream's thread woken beside the kernels must not
   * wait for a processor, as a GPU's copy engine would not: an SSD leg's
   * thread only submits its requests, and the d2h thread, woken for a leg
   * primed a few microseconds before, took 1.2-4.4 ms to run on the
   * development VM (2026-12-02; 16-57 us on a short slice, with late ones
   * left: rok_host_thread_prompt). The copy threads checksum on the
   * processors, each taking one from the kernels, as the simulator has
   * them. The compute thread stays in the fair class: it only launches
   * and waits. */
  if (w->stream != ROK_STREAM_COMPUTE)
    note_wake(r, rok_host_thread_prompt());
  for (guint id = RUN_NONE;;) {
    if (id == RUN_NONE)
      id = runner_msg_value(next_work(r, w->stream));
    if (id == RUN_TASK_STOP)
      return NULL;
    if (id >= r->prog.n_actions) {
      run_task(r, id);
      id = RUN_NONE;
      continue;
    }
    GError *error = NULL;
    gboolean ok = TRUE, deferred = FALSE;
    if (!runner_failed(r)) { /* after a failure, issued actions are only acknowledged */
      RunnerRecord *rec = &r->rec[id];
      if (rec->start_ns == 0) /* a primed copy leg or an SSD leg started where it was issued */
        rec->start_ns = rok_host_now_ns();
      ok = exec_action(r, id, &deferred, &error);
      if (deferred) { /* its last I/O completion ends it */
        id = RUN_NONE;
        continue;
      }
      rec->end_ns = rok_host_now_ns();
    } else if (w->stream == ROK_STREAM_D2H || w->stream == ROK_STREAM_H2D) {
      runner_copy_settle(r, id);
    }
    if (!ok)
      runner_fail(r, error);
    id = track_done(r, id, compute); /* the compute stream's next, run at once if that made it ready */
  }
}

gboolean runner_compute_task(Runner *r, guint task, GError **error) {
  g_async_queue_push(r->work[ROK_STREAM_COMPUTE], runner_msg(task));
  while (runner_msg_value(g_async_queue_pop(r->completions)) != RUN_MSG_TASK)
    ; /* a cancellation's wake-up: the task still reports */
  return !runner_failed(r) || take_error(r, error);
}

/* ---- the tracker ---- */

/* Mark `id` issued; hand it to its stream's thread unless the caller
 * (the compute thread) takes it into *take, or it is a staged SSD leg,
 * which waits in r->to_store for the rest issued with it (pump). A d2h or
 * h2d leg is primed first. An SSD leg is timed from here, as a primed
 * copy leg is from its priming: the hand-off to the thread that begins it
 * is the leg's, as the simulator counts it (host.copy_overhead in its
 * fixed part); timed from that thread's start, the LLaMA-shaped model's
 * gathers of SSD legs lost 50 us each against the prediction
 * (2026-12-07). */
static void issue(Runner *r, guint id, guint *take) {
  RokStream s = runner_action(&r->prog, id)->stream;
  r->rec[id].state = RUN_ISSUED;
  if (s == ROK_STREAM_NVME_WRITE || s == ROK_STREAM_NVME_READ)
    r->rec[id].start_ns = rok_host_now_ns();
  r->in_flight++;
  r->busy[s]++;
  if (s == ROK_STREAM_D2H)
    runner_d2h_prime(r, id);
  else if (s == ROK_STREAM_H2D)
    runner_h2d_prime(r, id);
  if (take != NULL && s == ROK_STREAM_COMPUTE && *take == RUN_NONE)
    *take = id;
  else if ((s == ROK_STREAM_NVME_WRITE || s == ROK_STREAM_NVME_READ) && runner_ssd_leg_staged(r, id))
    g_array_append_val(r->to_store, id);
  else
    g_async_queue_push(r->work[s], runner_msg(id));
}

/* The staged SSD legs issued together go to the store's thread in one
 * hand-over, so that it wakes once and submits them all in one turn: one
 * call each, it woke for the first while the issuing thread was still
 * issuing the rest, and they went out 42-157 us after it (the
 * development VM, 2026-12-06: a gather of four writes took 461 us from
 * its first leg's start to its last leg's end where its requests take
 * 352). Where the store has no thread of its own, to their lanes. */
static void hand_to_store(Runner *r) {
  if (r->to_store->len == 0)
    return;
  if (!runner_ssd_legs_on_store(r, r->to_store))
    for (guint i = 0; i < r->to_store->len; i++) {
      guint id = g_array_index(r->to_store, guint, i);
      g_async_queue_push(r->work[runner_action(&r->prog, id)->stream], runner_msg(id));
    }
  g_array_set_size(r->to_store, 0);
}

static void run_free(Runner *r, guint id) {
  const RokAction *f = runner_action(&r->prog, id);
  r->rec[id].start_ns = r->rec[id].end_ns = rok_host_now_ns();
  runner_buffer_free(r, f->micro_batch, f->tensor);
}

/* Mark `id` done; frees it releases are run here, depth first. */
static void complete(Runner *r, guint id) {
  g_autoptr(GArray) stack = g_array_new(FALSE, FALSE, sizeof(guint));
  g_array_append_val(stack, id);
  while (stack->len > 0) {
    guint done = g_array_index(stack, guint, stack->len - 1);
    g_array_set_size(stack, stack->len - 1);
    r->rec[done].state = RUN_DONE;
    r->done++;
    const RunnerAction *ra = &r->prog.actions[done];
    const guint *dependents = runner_ids(&r->prog, ra->dependents);
    for (guint i = 0; i < ra->n_dependents; i++) {
      guint next = dependents[i];
      if (--r->rec[next].pending > 0 || runner_action(&r->prog, next)->kind != ROK_ACTION_FREE)
        continue;
      run_free(r, next);
      g_array_append_val(stack, next);
    }
  }
}

static void on_completion(Runner *r, guint id) {
  r->in_flight--;
  r->busy[runner_action(&r->prog, id)->stream]--;
  complete(r, id);
}

/* Whether `id` may be issued: every dependency has completed, or (a d2h
 * or h2d leg) all but the leg before it on its stream, which is running:
 * the two share nothing but the stream, whose primed copies keep both in
 * flight. */
static gboolean ready(const Runner *r, guint id) {
  const RunnerRecord *rec = &r->rec[id];
  guint after = r->prog.actions[id].after;
  return rec->pending == 0 || (rec->pending == 1 && after != RUN_NONE && r->rec[after].state == RUN_ISSUED);
}

/* Issue each stream's next actions, in its order, while they are ready and
 * it has a free lane (into *take what the compute thread takes, if not
 * NULL). Returns how many. */
static guint pump(Runner *r, guint *take) {
  guint issued = 0;
  for (guint s = 0; s < ROK_STREAM_ALL_COUNT; s++) {
    const GArray *order = r->prog.order[s];
    while (r->busy[s] < runner_lanes(s) && r->cursor[s] < order->len) {
      guint id = g_array_index(order, guint, r->cursor[s]);
      if (!ready(r, id))
        break;
      r->cursor[s]++;
      issue(r, id, take);
      issued++;
    }
  }
  hand_to_store(r);
  return issued;
}

/* `id` has ended: done, and what that made ready issued; the step's
 * thread is woken once nothing is in flight (the step is over, failed or
 * stuck). With `take` (the compute thread), the compute stream's next
 * action made ready is returned rather than handed over (RUN_NONE where
 * none). */
static guint track_done(Runner *r, guint id, gboolean take) {
  guint next = RUN_NONE;
  g_mutex_lock(&r->track_lock);
  on_completion(r, id);
  if (!runner_failed(r))
    pump(r, take ? &next : NULL);
  gboolean idle = r->in_flight == 0;
  g_mutex_unlock(&r->track_lock);
  if (idle)
    g_async_queue_push(r->completions, runner_msg(RUN_MSG_WAKE));
  return next;
}

static void reset(Runner *r) {
  for (guint id = 0; id < r->prog.n_actions; id++)
    r->rec[id] = (RunnerRecord){.pending = runner_action(&r->prog, id)->deps_count, .state = RUN_WAITING};
  for (guint s = 0; s < ROK_STREAM_ALL_COUNT; s++) {
    r->cursor[s] = 0;
    r->busy[s] = 0;
  }
  r->done = r->in_flight = 0;
  g_atomic_int_set(&r->d2h_slotless, 0);
}

static gboolean stuck(Runner *r, GError **error) {
  for (guint s = 0; s < ROK_STREAM_ALL_COUNT; s++)
    if (r->cursor[s] < r->prog.order[s]->len) {
      guint id = g_array_index(r->prog.order[s], guint, r->cursor[s]);
      GError *local = g_error_new(
          ROK_ERROR, ROK_ERROR_INPUT,
          "schedule action %u (%s) can never start: its dependencies wait for actions after it on its stream", id,
          rok_stream_name(s));
      rok_schedule_locate_action(r->prog.schedule, id, local);
      g_propagate_error(error, local);
      return FALSE;
    }
  g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "the schedule stops with %u of %u actions done", r->done,
              r->prog.n_actions);
  return FALSE;
}

/* `done`: the actions done, read under the tracker's lock (the callback
 * runs without it: a cancellation from it stops threads that take it). */
static void report_progress(Runner *r, guint step, gint64 *last, guint done) {
  gint64 now = rok_host_now_ns();
  if (r->options.progress == NULL || (now - *last < 100000000 && done < r->prog.n_actions))
    return;
  *last = now;
  RokExecProgress p = {.step = step, .steps = r->options.repeat + 1, .done = done, .total = r->prog.n_actions};
  r->options.progress(&p, r->options.progress_data);
}

/* Whether the step is over: every action done, or nothing in flight and
 * nothing to issue (it failed, or it is stuck). *done: the actions done. */
static gboolean step_over(Runner *r, guint *done) {
  g_mutex_lock(&r->track_lock);
  *done = r->done;
  gboolean over = *done == r->prog.n_actions || (r->in_flight == 0 && (runner_failed(r) || pump(r, NULL) == 0));
  g_mutex_unlock(&r->track_lock);
  return over;
}

gboolean runner_step(Runner *r, guint step, GError **error) {
  reset(r);
  if (!runner_compute_task(r, RUN_TASK_ZERO, error))
    return FALSE;
  rok_cl_device_reset_peak(r->device);
  r->step_fixed = rok_cl_device_allocated(r->device);
  r->step_others_cpu_s = rok_host_others_cpu_seconds(); /* read before the step's clock starts */
  r->step_start_ns = rok_host_now_ns();
  for (guint id = 0; id < r->prog.n_actions; id++) /* frees that wait for nothing */
    if (r->rec[id].pending == 0 && runner_action(&r->prog, id)->kind == ROK_ACTION_FREE &&
        r->rec[id].state == RUN_WAITING) {
      run_free(r, id);
      complete(r, id);
    }
  gint64 last = 0;
  g_mutex_lock(&r->track_lock);
  pump(r, NULL);
  g_mutex_unlock(&r->track_lock);
  guint done = 0;
  while (!step_over(r, &done)) {
    g_async_queue_timeout_pop(r->completions, 100000); /* a wake-up, a cancellation, or time for progress */
    report_progress(r, step, &last, done);
  }
  if (done < r->prog.n_actions && !runner_failed(r))
    return stuck(r, error);
  if (runner_failed(r))
    return take_error(r, error);
  report_progress(r, step, &last, r->prog.n_actions);
  return runner_compute_task(r, RUN_TASK_CHECKSUM, error);
}

#endif /* ROK_WITH_OPENCL */
