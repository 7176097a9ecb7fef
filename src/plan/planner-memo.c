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
 * A run the budget did not change (RokSimResult.budget_bound) is the same
 * under any larger budget: the simulator compares live memory with the
 * budget only to hold something back, and a larger budget holds back no
 * more. So besides each run under its own budget, the memo keeps per plan
 * the smallest budget it ran unchanged under, which answers every larger
 * one: the baselines and finalists the final judgement runs at every
 * budget of the curve are simulated once.
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
  guint64 memory_budget;
  guint detail;
  guint8 whole_layers, prefetch;
  guint8 decisions[]; /* n_tensors */
} MemoKey;

typedef struct {
  guint64 from; /* the smallest budget it ran under unchanged */
  PlanEval eval;
} MemoFree;

struct _PlanMemo {
  gint refs; /* atomic */
  GMutex lock;
  GHashTable *table; /* MemoKey* -> PlanEval* */
  GHashTable *free;  /* MemoKey* with memory_budget 0 -> MemoFree* */
  gsize n_tensors, bytes;
  guint64 hits;
};

static gsize key_size(gsize n) {
  return sizeof(MemoKey) + n;
}

static guint key_hash(gconstpointer data) {
  const guint8 *b = data;
  guint32 h = 2166136261u; /* FNV-1a */
  for (gsize i = 0; i < key_size(((const MemoKey *)data)->n); i++)
    h = (h ^ b[i]) * 16777619u;
  return h;
}

static gboolean key_equal(gconstpointer a, gconstpointer b) {
  return memcmp(a, b, key_size(((const MemoKey *)a)->n)) == 0;
}

PlanMemo *plan_memo_new(gsize n_tensors) {
  PlanMemo *m = g_new0(PlanMemo, 1);
  m->refs = 1;
  g_mutex_init(&m->lock);
  m->table = g_hash_table_new_full(key_hash, key_equal, g_free, g_free);
  m->free = g_hash_table_new_full(key_hash, key_equal, g_free, g_free);
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
  g_hash_table_unref(m->free);
  g_mutex_clear(&m->lock);
  g_free(m);
}

static MemoKey *key_new(const PlanMemo *m, const guint8 *decisions, const RokStepOptions *o, guint prefetch,
                        guint64 memory_budget) {
  MemoKey *k = g_malloc0(key_size(m->n_tensors)); /* zeroed: padding is hashed */
  k->n = m->n_tensors;
  k->memory_budget = memory_budget;
  k->detail = o->detail_micro_batches;
  k->whole_layers = (guint8)(o->rebuild_whole_layers != FALSE);
  k->prefetch = (guint8)prefetch;
  memcpy(k->decisions, decisions, m->n_tensors);
  return k;
}

gboolean plan_memo_lookup(PlanMemo *m, const guint8 *decisions, const RokStepOptions *o, guint prefetch,
                          PlanEval *out) {
  g_autofree MemoKey *k = key_new(m, decisions, o, prefetch, o->memory_budget);
  g_mutex_lock(&m->lock);
  const PlanEval *e = g_hash_table_lookup(m->table, k);
  if (e == NULL) { /* the same key with budget 0: the plan under any budget */
    k->memory_budget = 0;
    const MemoFree *f = g_hash_table_lookup(m->free, k);
    if (f != NULL && o->memory_budget >= f->from)
      e = &f->eval;
  }
  if (e != NULL) {
    *out = *e;
    m->hits++;
  }
  g_mutex_unlock(&m->lock);
  return e != NULL;
}

void plan_memo_insert(PlanMemo *m, const guint8 *decisions, const RokStepOptions *o, guint prefetch,
                      const PlanEval *eval, gboolean budget_bound) {
  gsize cost = key_size(m->n_tensors) + sizeof(MemoFree);
  MemoKey *k = key_new(m, decisions, o, prefetch, o->memory_budget);
  MemoKey *any = budget_bound ? NULL : key_new(m, decisions, o, prefetch, 0);
  g_mutex_lock(&m->lock);
  if (m->bytes + cost <= MEMO_MAX_BYTES && !g_hash_table_contains(m->table, k)) {
    g_hash_table_insert(m->table, k, g_memdup2(eval, sizeof *eval));
    m->bytes += cost;
    k = NULL;
  }
  MemoFree *f = any ? g_hash_table_lookup(m->free, any) : NULL;
  if (f != NULL) {
    f->from = MIN(f->from, o->memory_budget);
  } else if (any != NULL && m->bytes + cost <= MEMO_MAX_BYTES) {
    f = g_new(MemoFree, 1);
    *f = (MemoFree){.from = o->memory_budget, .eval = *eval};
    g_hash_table_insert(m->free, any, f);
    m->bytes += cost;
    any = NULL;
  }
  g_mutex_unlock(&m->lock);
  g_free(k);
  g_free(any);
}

guint64 plan_memo_hits(PlanMemo *m) {
  g_mutex_lock(&m->lock);
  guint64 hits = m->hits;
  g_mutex_unlock(&m->lock);
  return hits;
}
