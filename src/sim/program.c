/* Compiling a plan into the backward program of one micro-batch.
 *
 * Recompute groups: the recomputed saved tensors of one layer (each one of
 * layer -1 on its own). A group is rebuilt right before the backward op
 * that comes first, in backward order, among the ops that read its
 * tensors. Its rebuild re-runs, in forward order, the producers of its
 * tensors and, going up the chain, of every input they need that is
 * neither kept nor offloaded. */
#include "sim-private.h"

#include <math.h>
#include <string.h>

#include "rok/core.h"

#define TEMP_BIT SIM_TEMP_BIT

enum { MARK_NONE, MARK_SEED, MARK_FULL };

typedef struct {
  guint trigger; /* op whose backward comes right after the rebuild */
  guint key;     /* layer, or (layers + tensor id) for layer -1 */
  guint member;  /* the tensor, for layer -1 groups */
} Group;

/* Room for `need` elements of `size` bytes in *buf (capacity *cap). */
static void reserve(gpointer *buf, guint *cap, guint need, gsize size) {
  if (need <= *cap)
    return;
  *cap = MAX(need, MAX(2 * *cap, 256u));
  *buf = g_realloc_n(*buf, *cap, size);
}

static inline void push_item(SimProgram *prog, const SimItem *item) {
  if (prog->n_items == prog->items_cap)
    reserve((gpointer *)&prog->items, &prog->items_cap, prog->n_items + 1, sizeof(SimItem));
  prog->items[prog->n_items++] = *item;
}

static inline void push_release(SimProgram *prog, guint item, guint tensor) {
  if (prog->n_rel == prog->rel_cap)
    reserve((gpointer *)&prog->rel, &prog->rel_cap, prog->n_rel + 1, sizeof(SimRelease));
  prog->rel[prog->n_rel++] = (SimRelease){.item = item, .tensor = tensor};
}

void sim_program_init(SimProgram *prog, guint n_ops, guint n_tensors) {
  prog->items = NULL;
  prog->n_items = prog->items_cap = 0;
  prog->ids = NULL;
  prog->rel = NULL;
  prog->n_ids = prog->ids_cap = prog->n_rel = prog->rel_cap = 0;
  reserve((gpointer *)&prog->ids, &prog->ids_cap, 1, sizeof(guint)); /* never NULL: sim_ids adds offsets */
  prog->eff = g_new0(guint8, MAX(n_tensors, 1));
  prog->fwd_check_ns = g_new0(gint64, MAX(n_ops, 1));
  prog->first_need = g_new(guint, MAX(n_tensors, 1));
  prog->last_use = g_new(guint, MAX(n_tensors, 1));
  prog->prefetch = g_array_new(FALSE, FALSE, sizeof(guint));
  prog->op_mark = g_new0(guint8, MAX(n_ops, 1));
  prog->work = g_array_new(FALSE, FALSE, sizeof(guint));
  prog->group_ops = g_array_new(FALSE, FALSE, sizeof(guint));
  prog->group_of = g_array_new(FALSE, FALSE, sizeof(Group));
  prog->layer_t = prog->layer_tensors = prog->layer_o = prog->layer_ops = NULL; /* index_layers */
  prog->trigger = NULL;
  prog->gather_closer = g_new(guint, MAX(n_tensors, 1));
}

void sim_program_clear(SimProgram *prog) {
  g_free(prog->items);
  g_free(prog->ids);
  g_free(prog->rel);
  g_free(prog->eff);
  g_free(prog->fwd_check_ns);
  g_free(prog->first_need);
  g_free(prog->last_use);
  g_free(prog->gather_closer);
  g_array_unref(prog->prefetch);
  g_free(prog->op_mark);
  g_array_unref(prog->work);
  g_array_unref(prog->group_ops);
  g_array_unref(prog->group_of);
  g_free(prog->layer_t);
  g_free(prog->layer_tensors);
  g_free(prog->layer_o);
  g_free(prog->layer_ops);
  g_free(prog->trigger);
}

/* Bucket ids 0 .. n by their layer (those outside 0 .. layers - 1 left
 * out), keeping id order: first[l] .. first[l + 1] index into *ids. */
static void bucket_by_layer(guint n, guint layers, gint (*layer_of)(const RokTrace *, guint), const RokTrace *trace,
                            guint **first, guint **ids) {
  *first = g_new0(guint, layers + 2);
  for (guint i = 0; i < n; i++) {
    gint l = layer_of(trace, i);
    if (l >= 0 && (guint)l < layers)
      (*first)[l + 2]++;
  }
  for (guint l = 0; l < layers; l++)
    (*first)[l + 2] += (*first)[l + 1];
  *ids = g_new(guint, MAX((*first)[layers + 1], 1));
  for (guint i = 0; i < n; i++) {
    gint l = layer_of(trace, i);
    if (l >= 0 && (guint)l < layers)
      (*ids)[(*first)[l + 1]++] = i;
  }
}

static gint tensor_layer(const RokTrace *trace, guint t) {
  return rok_trace_tensor(trace, t)->layer;
}

static gint op_layer(const RokTrace *trace, guint o) {
  return rok_trace_op(trace, o)->layer;
}

static guint max_needed_by(const RokTensor *tensor) {
  guint op = 0;
  for (guint i = 0; i < tensor->needed_by->len; i++)
    op = MAX(op, g_array_index(tensor->needed_by, guint, i));
  return op;
}

static void index_layers(RokSim *sim) {
  SimProgram *prog = &sim->prog;
  if (prog->layer_t != NULL)
    return;
  guint layers = sim->trace->layers;
  bucket_by_layer(sim->n_tensors, layers, tensor_layer, sim->trace, &prog->layer_t, &prog->layer_tensors);
  bucket_by_layer(sim->n_ops, layers, op_layer, sim->trace, &prog->layer_o, &prog->layer_ops);
  prog->trigger = g_new(guint, MAX(sim->n_tensors, 1));
  for (guint t = 0; t < sim->n_tensors; t++)
    prog->trigger[t] = max_needed_by(rok_trace_tensor(sim->trace, t));
}

static gboolean available(const SimProgram *prog, guint tensor) {
  guint8 e = prog->eff[tensor];
  return e == ROK_DECISION_KEEP || e == ROK_DECISION_OFFLOAD_NVME || e == ROK_DECISION_OFFLOAD_HOST;
}

/* The device's checksum of a tensor of BYTES that leaves it (rok's
 * executor checks the copy against it). */
static gint64 device_check_ns(const RokHw *hw, guint64 bytes) {
  double rate = hw->gpu.checksum_bandwidth;
  return hw->gpu.checksum_overhead + (rate > 0 ? (gint64)llround((double)bytes * 1e9 / rate) : 0);
}

static gboolean set_decisions(RokSim *sim, const RokStepPlan *plan, GError **error) {
  SimProgram *prog = &sim->prog;
  memset(prog->fwd_check_ns, 0, sizeof(gint64) * sim->n_ops);
  for (guint t = 0; t < sim->n_tensors; t++) {
    const RokTensor *tensor = rok_trace_tensor(sim->trace, t);
    RokDecision d = plan->decisions[t];
    if ((guint)d >= ROK_DECISION_COUNT) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "plan: tensor %u (%s) has an unknown decision %d", t,
                  tensor->name, (int)d);
      return FALSE;
    }
    prog->eff[t] = rok_tensor_is_saved(tensor) ? (guint8)d : SIM_TRANSIENT;
    if (prog->eff[t] == ROK_DECISION_RECOMPUTE && !tensor->recomputable) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "plan: tensor %u (%s) cannot be recomputed", t,
                  tensor->name);
      return FALSE;
    }
    if (prog->eff[t] == ROK_DECISION_OFFLOAD_NVME && sim->hw->nvme.devices == 0) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                  "plan: tensor %u (%s) is offloaded to NVMe, but hardware profile %s has no NVMe devices", t,
                  tensor->name, sim->hw->name ? sim->hw->name : "(unnamed)");
      return FALSE;
    }
    if (prog->eff[t] == ROK_DECISION_OFFLOAD_NVME || prog->eff[t] == ROK_DECISION_OFFLOAD_HOST)
      prog->fwd_check_ns[tensor->producer] += device_check_ns(sim->hw, tensor->bytes);
    prog->last_use[t] = ROK_NO_ID;
  }
  return TRUE;
}

static gint group_compare(gconstpointer a, gconstpointer b) {
  const Group *x = a, *y = b;
  if (x->trigger != y->trigger)
    return x->trigger > y->trigger ? -1 : 1;
  return x->key < y->key ? -1 : x->key > y->key;
}

/* The recompute groups, in the order their rebuilds run. */
static void find_groups(RokSim *sim) {
  SimProgram *prog = &sim->prog;
  guint n_layers = sim->trace->layers;
  GArray *groups = prog->group_of;
  g_array_set_size(groups, 0);
  g_autofree guint *layer_trigger = g_new(guint, n_layers + 1);
  for (guint l = 0; l < n_layers; l++)
    layer_trigger[l] = ROK_NO_ID;
  for (guint t = 0; t < sim->n_tensors; t++) {
    if (prog->eff[t] != ROK_DECISION_RECOMPUTE)
      continue;
    const RokTensor *tensor = rok_trace_tensor(sim->trace, t);
    guint trigger = prog->trigger[t];
    if (tensor->layer >= 0 && (guint)tensor->layer < n_layers) {
      guint *lt = &layer_trigger[tensor->layer];
      *lt = *lt == ROK_NO_ID ? trigger : MAX(*lt, trigger);
    } else {
      Group g = {.trigger = trigger, .key = n_layers + t, .member = t};
      g_array_append_val(groups, g);
    }
  }
  for (guint l = 0; l < n_layers; l++)
    if (layer_trigger[l] != ROK_NO_ID) {
      Group g = {.trigger = layer_trigger[l], .key = l, .member = ROK_NO_ID};
      g_array_append_val(groups, g);
    }
  g_array_sort(groups, group_compare);
}

static gboolean is_member(const RokSim *sim, const Group *g, guint t) {
  if (sim->prog.eff[t] != ROK_DECISION_RECOMPUTE)
    return FALSE;
  if (g->member != ROK_NO_ID)
    return t == g->member;
  gint layer = rok_trace_tensor(sim->trace, t)->layer;
  return layer >= 0 && (guint)layer == g->key;
}

/* Add `t` to the tensors the rebuild makes, marking its producer. */
static gboolean want(RokSim *sim, guint8 *in_set, guint t, gint layer, GError **error) {
  SimProgram *prog = &sim->prog;
  if (in_set[t])
    return TRUE;
  const RokTensor *tensor = rok_trace_tensor(sim->trace, t);
  if (!tensor->recomputable) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "plan: rebuilding layer %d needs tensor %u (%s), which is neither kept nor offloaded and "
                "cannot be recomputed",
                layer, t, tensor->name);
    return FALSE;
  }
  in_set[t] = 1;
  g_array_append_val(prog->work, t);
  guint8 *mark = &prog->op_mark[tensor->producer];
  if (*mark == MARK_NONE)
    g_array_append_val(prog->group_ops, tensor->producer);
  guint8 want_mark = tensor->recompute_from->len > 0 ? MARK_FULL : MARK_SEED;
  *mark = MAX(*mark, want_mark);
  return TRUE;
}

static gint compare_guint(gconstpointer a, gconstpointer b) {
  guint x = *(const guint *)a, y = *(const guint *)b;
  return x < y ? -1 : x > y;
}

/* Megatron's rebuild: everything the layer's ops make. */
static gboolean want_layer(RokSim *sim, guint8 *in_set, gint layer, GError **error) {
  const SimProgram *prog = &sim->prog;
  for (guint k = prog->layer_o[layer]; k < prog->layer_o[layer + 1]; k++) {
    const RokOp *op = rok_trace_op(sim->trace, prog->layer_ops[k]);
    for (guint i = 0; i < op->outputs->len; i++) {
      guint t = g_array_index(op->outputs, guint, i);
      /* A captured layer's last op can make a tensor saved outside the
       * layer (the head's input): kept or offloaded, and not rebuilt. */
      if (!rok_trace_tensor(sim->trace, t)->recomputable && available(&sim->prog, t))
        continue;
      if (!want(sim, in_set, t, layer, error))
        return FALSE;
    }
  }
  return TRUE;
}

/* The group's ops in id order. A closure that reaches back over earlier
 * layers (a plan keeping no layer input rebuilds them all, tens of
 * thousands of ops a run) fills most of its id range: collected from the
 * ops' marks in one pass rather than sorted. */
static void sort_group_ops(SimProgram *prog) {
  GArray *ops = prog->group_ops;
  if (ops->len < 2)
    return;
  guint lo = G_MAXUINT, hi = 0;
  for (guint i = 0; i < ops->len; i++) {
    guint op = g_array_index(ops, guint, i);
    lo = MIN(lo, op);
    hi = MAX(hi, op);
  }
  if ((guint64)(hi - lo) >= 4ull * ops->len) {
    g_array_sort(ops, compare_guint);
    return;
  }
  guint n = 0;
  for (guint op = lo; op <= hi; op++)
    if (prog->op_mark[op] != MARK_NONE)
      g_array_index(ops, guint, n++) = op;
  g_assert(n == ops->len);
}

/* The closure of a group: every tensor to rebuild (prog->work) and every
 * op to re-run (prog->group_ops, sorted). */
static gboolean close_group(RokSim *sim, const Group *g, gboolean whole_layer, guint8 *in_set,
                            GError **error) {
  SimProgram *prog = &sim->prog;
  g_array_set_size(prog->work, 0);
  g_array_set_size(prog->group_ops, 0);
  gint layer = g->member == ROK_NO_ID ? (gint)g->key : -1;
  if (g->member != ROK_NO_ID) {
    if (!want(sim, in_set, g->member, layer, error))
      return FALSE;
  } else { /* the layer's recomputed tensors, in id order */
    for (guint k = prog->layer_t[layer]; k < prog->layer_t[layer + 1]; k++) {
      guint t = prog->layer_tensors[k];
      if (prog->eff[t] == ROK_DECISION_RECOMPUTE && !want(sim, in_set, t, layer, error))
        return FALSE;
    }
    if (whole_layer && !want_layer(sim, in_set, layer, error))
      return FALSE;
  }
  for (guint i = 0; i < prog->work->len; i++) {
    const RokTensor *tensor = rok_trace_tensor(sim->trace, g_array_index(prog->work, guint, i));
    for (guint j = 0; j < tensor->recompute_from->len; j++) {
      guint input = g_array_index(tensor->recompute_from, guint, j);
      if (!available(prog, input) && !want(sim, in_set, input, layer, error))
        return FALSE;
    }
  }
  sort_group_ops(prog);
  return TRUE;
}

static inline void push_id(SimProgram *prog, guint id) {
  if (prog->n_ids == prog->ids_cap)
    reserve((gpointer *)&prog->ids, &prog->ids_cap, prog->n_ids + 1, sizeof(guint));
  prog->ids[prog->n_ids++] = id;
}

static gboolean listed(const SimProgram *prog, guint from, guint id) {
  for (guint i = from; i < prog->n_ids; i++)
    if (prog->ids[i] == id)
      return TRUE;
  return FALSE;
}

/* The inputs one re-run reads: those its wanted outputs are computed from. */
static void push_reads(RokSim *sim, const RokOp *op, const guint8 *in_set, gboolean sources, SimItem *item) {
  SimProgram *prog = &sim->prog;
  guint from = prog->n_ids;
  for (guint o = 0; o < op->outputs->len; o++) {
    guint t = g_array_index(op->outputs, guint, o);
    if (!in_set[t])
      continue;
    const RokTensor *out = rok_trace_tensor(sim->trace, t);
    for (guint j = 0; j < out->recompute_from->len; j++) {
      guint input = g_array_index(out->recompute_from, guint, j);
      if (available(prog, input) == sources && !listed(prog, from, input))
        push_id(prog, input);
    }
  }
  if (sources) {
    item->needs = from;
    item->n_needs = prog->n_ids - from;
  }
}

static void emit_rebuild_op(RokSim *sim, const Group *g, guint op_id, const guint8 *in_set) {
  SimProgram *prog = &sim->prog;
  const RokOp *op = rok_trace_op(sim->trace, op_id);
  gboolean full = prog->op_mark[op_id] == MARK_FULL;
  SimItem item = {.kind = ROK_ACTION_RECOMPUTE, .op = op_id, .ns = full ? sim->fwd_ns[op_id] : 0};
  push_reads(sim, op, in_set, TRUE, &item);
  item.allocs = prog->n_ids;
  guint64 seed_bytes = 0;
  for (guint o = 0; o < op->outputs->len; o++) {
    guint out = g_array_index(op->outputs, guint, o);
    if (!full && !in_set[out])
      continue;
    push_id(prog, out);
    guint64 bytes = rok_trace_tensor(sim->trace, out)->bytes;
    item.alloc_bytes += bytes;
    seed_bytes += bytes;
  }
  item.n_allocs = prog->n_ids - item.allocs;
  if (!full) /* only the seed: write the mask */
    item.ns = sim_seed_rebuild_ns(sim, op_id, seed_bytes);
  guint index = prog->n_items;
  push_item(prog, &item);
  /* Intermediates are freed after the last re-run that reads them, or
   * after their producer's re-run when none does: one candidate release
   * per reader and per allocation, the last one kept (dedupe_releases). */
  guint from = prog->n_ids;
  push_reads(sim, op, in_set, FALSE, &item);
  for (guint a = 0; a < item.n_allocs; a++) {
    guint id = prog->ids[item.allocs + a]; /* read first: appending may move the buffer */
    push_id(prog, id);
  }
  for (guint i = from; i < prog->n_ids; i++) {
    guint t = prog->ids[i];
    if (!is_member(sim, g, t))
      push_release(prog, index, t | TEMP_BIT);
  }
  prog->n_ids = from;
}

static void reset_group(RokSim *sim, guint8 *in_set) {
  SimProgram *prog = &sim->prog;
  for (guint i = 0; i < prog->work->len; i++)
    in_set[g_array_index(prog->work, guint, i)] = 0;
  for (guint i = 0; i < prog->group_ops->len; i++)
    prog->op_mark[g_array_index(prog->group_ops, guint, i)] = MARK_NONE;
}

/* Keep, for every intermediate of one group, only its last release.
 * prog->last_use is scratch here (all ROK_NO_ID between groups). */
static void dedupe_releases(SimProgram *prog, guint from) {
  for (guint i = from; i < prog->n_rel; i++) {
    const SimRelease *r = &prog->rel[i];
    guint *last = &prog->last_use[r->tensor & ~TEMP_BIT];
    *last = *last == ROK_NO_ID ? r->item : MAX(*last, r->item);
  }
  guint kept = from;
  for (guint i = from; i < prog->n_rel; i++) {
    SimRelease r = prog->rel[i];
    guint *last = &prog->last_use[r.tensor & ~TEMP_BIT];
    if (*last != r.item)
      continue;
    *last = ROK_NO_ID - 1; /* taken: drop duplicates of the same item */
    prog->rel[kept++] = r;
  }
  for (guint i = from; i < kept; i++)
    prog->last_use[prog->rel[i].tensor & ~TEMP_BIT] = ROK_NO_ID;
  prog->n_rel = kept;
}

static gboolean emit_group(RokSim *sim, const Group *g, gboolean whole_layer, guint8 *in_set,
                           GError **error) {
  SimProgram *prog = &sim->prog;
  if (!close_group(sim, g, whole_layer, in_set, error)) {
    reset_group(sim, in_set);
    return FALSE;
  }
  guint from = prog->n_rel;
  for (guint i = 0; i < prog->group_ops->len; i++)
    emit_rebuild_op(sim, g, g_array_index(prog->group_ops, guint, i), in_set);
  dedupe_releases(prog, from);
  reset_group(sim, in_set);
  return TRUE;
}

static void emit_backward(RokSim *sim, guint op) {
  SimProgram *prog = &sim->prog;
  SimItem item = {.kind = ROK_ACTION_BACKWARD, .op = op, .ns = sim->bwd_ns[op], .work_bytes = sim->grad_start_bytes[op],
                  .done_bytes = sim->grad_end_bytes[op]};
  item.needs = prog->n_ids;
  for (guint i = sim->bwd_need[op]; i < sim->bwd_need[op + 1]; i++)
    push_id(prog, sim->bwd_need_ids[i]);
  item.n_needs = prog->n_ids - item.needs;
  item.allocs = item.frees = prog->n_ids;
  push_item(prog, &item);
}

static gboolean emit_items(RokSim *sim, gboolean whole_layers, GError **error) {
  SimProgram *prog = &sim->prog;
  g_autofree guint8 *in_set = g_new0(guint8, MAX(sim->n_tensors, 1));
  const GArray *groups = prog->group_of;
  guint next = 0;
  for (guint op = sim->n_ops; op-- > 0;) {
    for (; next < groups->len && g_array_index(groups, Group, next).trigger == op; next++)
      if (!emit_group(sim, &g_array_index(groups, Group, next), whole_layers, in_set, error))
        return FALSE;
    emit_backward(sim, op);
  }
  return TRUE;
}

/* First and last use of every tensor, chunks, the prefetch order, and the
 * saved tensors' releases (after their last use). */
static guint unit_key(const RokSim *sim, RokPrefetchUnit unit, guint op) {
  switch (unit) {
  case ROK_PREFETCH_MODULE:
    return sim->op_module[op];
  case ROK_PREFETCH_OP:
    return op;
  default:
    return (guint)rok_trace_op(sim->trace, op)->layer;
  }
}

static void resolve_uses(RokSim *sim, RokPrefetchUnit unit) {
  SimProgram *prog = &sim->prog;
  for (guint t = 0; t < sim->n_tensors; t++)
    prog->first_need[t] = prog->last_use[t] = ROK_NO_ID;
  g_array_set_size(prog->prefetch, 0);
  guint key = 0, chunk = 0;
  for (guint i = 0; i < prog->n_items; i++) {
    SimItem *item = &prog->items[i];
    guint item_key = unit_key(sim, unit, item->op);
    if (i > 0 && item_key != key)
      chunk++;
    key = item_key;
    item->chunk = chunk;
    for (guint n = 0; n < item->n_needs; n++) {
      guint t = sim_ids(prog, item->needs)[n];
      if (prog->first_need[t] == ROK_NO_ID) {
        prog->first_need[t] = i;
        if (prog->eff[t] == ROK_DECISION_OFFLOAD_NVME || prog->eff[t] == ROK_DECISION_OFFLOAD_HOST)
          g_array_append_val(prog->prefetch, t);
      }
      prog->last_use[t] = i;
    }
  }
  for (guint t = 0; t < sim->n_tensors; t++)
    if (prog->last_use[t] != ROK_NO_ID)
      push_release(prog, prog->last_use[t], t);
}

/* Attach the releases to their items, in item order then tensor order:
 * bucketed by item, each item's few sorted by tensor. */
static void attach_releases(SimProgram *prog) {
  guint n_items = prog->n_items, n_rel = prog->n_rel;
  g_autofree guint *start = g_new0(guint, n_items + 1);
  for (guint r = 0; r < n_rel; r++)
    start[prog->rel[r].item + 1]++;
  for (guint i = 0; i < n_items; i++)
    start[i + 1] += start[i];
  guint base = prog->n_ids;
  reserve((gpointer *)&prog->ids, &prog->ids_cap, base + n_rel, sizeof(guint));
  prog->n_ids = base + n_rel;
  guint *ids = prog->ids + base;
  g_autofree guint *fill = g_memdup2(start, sizeof(guint) * (n_items + 1));
  for (guint r = 0; r < n_rel; r++) {
    const SimRelease *rel = &prog->rel[r];
    ids[fill[rel->item]++] = rel->tensor;
  }
  for (guint i = 0; i < n_items; i++) {
    SimItem *item = &prog->items[i];
    item->frees = base + start[i];
    item->n_frees = start[i + 1] - start[i];
    guint *t = ids + start[i];
    for (guint a = 1; a < item->n_frees; a++) /* insertion sort: a handful each */
      for (guint b = a; b > 0 && t[b - 1] > t[b]; b--) {
        guint x = t[b];
        t[b] = t[b - 1];
        t[b - 1] = x;
      }
  }
}

/* The prefetcher's reserve: each item's start and the ledger's level
 * before it, counting every allocation (an upper bound) and every release. */
static void compute_levels(RokSim *sim) {
  SimProgram *prog = &sim->prog;
  gint64 level = 0;
  for (guint i = 0; i < prog->n_items; i++) {
    SimItem *item = &prog->items[i];
    item->start_bytes = item->alloc_bytes + item->work_bytes;
    item->level = level;
    gint64 freed = (gint64)item->done_bytes;
    for (guint f = 0; f < item->n_frees; f++)
      freed += (gint64)rok_trace_tensor(sim->trace, sim_ids(prog, item->frees)[f] & ~SIM_TEMP_BIT)->bytes;
    level += (gint64)item->start_bytes - freed;
  }
}

guint64 sim_gather_requests(const RokHw *hw) {
  return hw->nvme.queue_depth * MAX(hw->nvme.devices, 1) / 2;
}

/* The tensors whose SSD writes are gathered: offloaded to the SSDs through
 * the staging buffer (not gpudirect, which would hold GPU memory while it
 * waits), of fewer requests than sim_gather_requests; each with the last
 * of its module's that forward copies out (the latest producer, then the
 * highest id, as an op's outputs are allocated in id order). */
static void find_gather_closers(RokSim *sim) {
  SimProgram *prog = &sim->prog;
  guint64 most = sim_gather_requests(sim->hw);
  for (guint t = 0; t < sim->n_tensors; t++)
    prog->gather_closer[t] = ROK_NO_ID;
  if (sim->hw->nvme.gpudirect || most == 0)
    return;
  g_autofree guint *last = g_new(guint, MAX(sim->n_ops, 1)); /* per module (at most one per op) */
  for (guint m = 0; m < sim->n_ops; m++)
    last[m] = ROK_NO_ID;
  for (guint t = 0; t < sim->n_tensors; t++) {
    const RokTensor *tensor = rok_trace_tensor(sim->trace, t);
    guint64 requests = (tensor->bytes + ROK_SIM_CHUNK_BYTES - 1) / ROK_SIM_CHUNK_BYTES;
    if (prog->eff[t] != ROK_DECISION_OFFLOAD_NVME || requests >= most)
      continue;
    guint *l = &last[sim->op_module[tensor->producer]];
    if (*l == ROK_NO_ID || rok_trace_tensor(sim->trace, *l)->producer <= tensor->producer)
      *l = t;
    prog->gather_closer[t] = t; /* marked: its module's closer is filled in below */
  }
  for (guint t = 0; t < sim->n_tensors; t++)
    if (prog->gather_closer[t] != ROK_NO_ID)
      prog->gather_closer[t] = last[sim->op_module[rok_trace_tensor(sim->trace, t)->producer]];
}

gboolean sim_program_build(RokSim *sim, const RokStepPlan *plan, GError **error) {
  SimProgram *prog = &sim->prog;
  prog->n_items = 0;
  prog->n_ids = prog->n_rel = 0;
  if (!set_decisions(sim, plan, error))
    return FALSE;
  find_gather_closers(sim);
  index_layers(sim);
  find_groups(sim);
  if (!emit_items(sim, plan->options.rebuild_whole_layers, error))
    return FALSE;
  resolve_uses(sim, plan->options.prefetch_unit);
  attach_releases(prog);
  compute_levels(sim);
  return TRUE;
}
