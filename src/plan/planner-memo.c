/* What the simulator said of each plan the planner has run, so that no plan
 * is simulated twice: the descent, the ascent, every grid budget's search,
 * the polish of each finalist and the reduced machines' planners meet the
 * same plans again and again (a run is deterministic, so a remembered
 * answer is the answer).
 *
 * A run is known by the decision of every tensor (after the granularity's
 * groups: what the simulator sees) and the options that change it. One
 * memo serves a planner, its threads and its reduced copies: they share
 * the trace, the machine and the validity rules (host limit, write rate).
 * Its size is bounded; past the bound it stops remembering, which changes
 * how long planning takes, never what it finds.
 *
 * A run does not depend on the budget itself but on how each of its
 * comparisons of live memory with the budget came out (a compute waits,
 * a read is held back): the simulator says the range of budgets under
 * which every one comes out the same (RokSimResult.same_budget_lo/hi), and
 * the run is the same under any budget in it. So the memo keeps per plan
 * the ranges it has run under, and a budget in one is answered from it:
 * the baselines and finalists the final judgement runs at every budget of
 * the curve, the descent's steps held under each budget, are simulated
 * once where the budget changes nothing. The prefetch window likewise
 * (RokSimResult.same_window_lo/hi, for the same prefetch unit): a window
 * that never held a read back answers every larger one.
 *
 * ROK_PLAN_MEMO_CHECK=1 in the environment simulates every answer again
 * and aborts when the two differ (tests/unit/test-planner runs with it). */
#include "planner-private.h"

#include <string.h>

/* Decisions remembered at most, in bytes (keys and values): a 175B trace's
 * plans are ~10 KB each, so some thousands of plans. */
#define MEMO_MAX_BYTES (256u << 20)

typedef struct {
  gsize n; /* decisions */
  guint detail;
  guint8 whole_layers, unit; /* unit: the prefetch unit */
  guint8 decisions[]; /* n_tensors */
} MemoKey;

/* A run and the budgets and prefetch windows it is the same under:
 * [lo, hi) of each, or [lo, hi] when hi is the type's largest (nothing
 * was held back). */
typedef struct {
  guint64 lo, hi;
  guint window_lo, window_hi;
  PlanEval eval;
} MemoRange;

struct _PlanMemo {
  gint refs; /* atomic */
  GMutex lock;
  GHashTable *table; /* MemoKey* -> GArray* of MemoRange */
  gsize n_tensors, bytes;
  guint64 hits;
};

static gsize key_size(gsize n) {
  return sizeof(MemoKey) + n;
}

/* Multiply-xorshift over 8-byte words (a key is some thousand decisions,
 * hashed at every run), the tail byte by byte. */
static guint key_hash(gconstpointer data) {
  const guint8 *b = data;
  gsize n = key_size(((const MemoKey *)data)->n), i = 0;
  guint64 h = 14695981039346656037u;
  for (; i + 8 <= n; i += 8) {
    guint64 w;
    memcpy(&w, b + i, 8);
    h = (h ^ w) * 0x9e3779b97f4a7c15u;
    h ^= h >> 29;
  }
  for (; i < n; i++)
    h = (h ^ b[i]) * 0x9e3779b97f4a7c15u;
  return (guint)(h ^ (h >> 32));
}

static gboolean key_equal(gconstpointer a, gconstpointer b) {
  return memcmp(a, b, key_size(((const MemoKey *)a)->n)) == 0;
}

PlanMemo *plan_memo_new(gsize n_tensors) {
  PlanMemo *m = g_new0(PlanMemo, 1);
  m->refs = 1;
  g_mutex_init(&m->lock);
  m->table = g_hash_table_new_full(key_hash, key_equal, g_free, (GDestroyNotify)g_array_unref);
  m->n_tensors = n_tensors;
  return m;
}

PlanMemo *plan_memo_ref(PlanMemo *m) {
  g_atomic_int_inc(&m->refs);
  return m;
}

void plan_memo_unref(PlanMemo *m) {
  if (m == NULL || !g_atomic_int_dec_and_test(&m->refs))
    return;
  g_hash_table_unref(m->table);
  g_mutex_clear(&m->lock);
  g_free(m);
}

static MemoKey *key_new(const PlanMemo *m, const guint8 *decisions, const RokStepOptions *o) {
  MemoKey *k = g_malloc0(key_size(m->n_tensors)); /* zeroed: padding is hashed */
  k->n = m->n_tensors;
  k->detail = o->detail_micro_batches;
  k->whole_layers = (guint8)(o->rebuild_whole_layers != FALSE);
  k->unit = (guint8)o->prefetch_unit;
  memcpy(k->decisions, decisions, m->n_tensors);
  return k;
}

static const MemoRange *range_of(GArray *ranges, guint64 budget, guint window) {
  for (guint i = 0; ranges != NULL && i < ranges->len; i++) {
    const MemoRange *r = &g_array_index(ranges, MemoRange, i);
    if (budget >= r->lo && (budget < r->hi || r->hi == G_MAXUINT64) && window >= r->window_lo &&
        (window < r->window_hi || r->window_hi == G_MAXUINT))
      return r;
  }
  return NULL;
}

gboolean plan_memo_lookup(PlanMemo *m, const guint8 *decisions, const RokStepOptions *o, guint64 budget,
                          PlanEval *out) {
  g_autofree MemoKey *k = key_new(m, decisions, o);
  g_mutex_lock(&m->lock);
  const MemoRange *r = range_of(g_hash_table_lookup(m->table, k), budget, o->prefetch_window);
  if (r != NULL) {
    *out = r->eval;
    m->hits++;
  }
  g_mutex_unlock(&m->lock);
  return r != NULL;
}

void plan_memo_insert(PlanMemo *m, const guint8 *decisions, const RokStepOptions *o, const MemoSame *same,
                      const PlanEval *eval) {
  MemoKey *k = key_new(m, decisions, o);
  MemoRange range = {.lo = same->budget_lo, .hi = same->budget_hi, .window_lo = same->window_lo,
                     .window_hi = same->window_hi, .eval = *eval};
  g_mutex_lock(&m->lock);
  GArray *ranges = g_hash_table_lookup(m->table, k);
  gsize cost = sizeof range + (ranges == NULL ? key_size(m->n_tensors) : 0);
  if (m->bytes + cost <= MEMO_MAX_BYTES) { /* inserted after a miss: no range holds this run yet */
    if (ranges == NULL) {
      ranges = g_array_new(FALSE, FALSE, sizeof(MemoRange));
      g_hash_table_insert(m->table, g_steal_pointer(&k), ranges);
    }
    g_array_append_val(ranges, range);
    m->bytes += cost;
  }
  g_mutex_unlock(&m->lock);
  g_free(k);
}

guint64 plan_memo_hits(PlanMemo *m) {
  g_mutex_lock(&m->lock);
  guint64 hits = m->hits;
  g_mutex_unlock(&m->lock);
  return hits;
}
