/* "calibrated_shapes": which GEMMs and element-wise ops `rok calibrate`
 * timed, so that a prediction for shapes far outside them can say so, and
 * the GEMM ops' own times, which the simulator takes for ops of the same
 * kind and shape. */
#include "hw-private.h"

#include <math.h>
#include <string.h>

#include "rok/core.h"

static const char *const keys[] = {"gemm", "elementwise_bytes", "gemm_ops", NULL};
static const char *const op_keys[] = {"kind", "shape", "forward", "backward", "backward_first", NULL};

/* A GEMM dimension: rok's kernels take 32-bit sizes. */
#define MAX_DIM ((guint64)G_MAXUINT32)

/* PAIR as [batch, m, n, k]; AT names it in messages. */
static gboolean read_dims(const RokJsonObj *o, json_object *pair, const char *at, guint64 shape[4], GError **error) {
  gboolean ok = json_object_is_type(pair, json_type_array) && json_object_array_length(pair) == 4;
  for (guint d = 0; ok && d < 4; d++) {
    json_object *e = json_object_array_get_idx(pair, d);
    ok = json_object_is_type(e, json_type_int) && json_object_get_int64(e) > 0 &&
         (guint64)json_object_get_int64(e) <= MAX_DIM;
    shape[d] = ok ? (guint64)json_object_get_int64(e) : 0;
  }
  if (!ok)
    rok_json_error(error, o->doc, at, "must be [batch, m, n, k]: four whole numbers from 1 to %" G_GUINT64_FORMAT,
                   MAX_DIM);
  return ok;
}

static gboolean read_shape(const RokJsonObj *o, json_object *pair, guint i, guint64 shape[4], GError **error) {
  g_autofree char *at = g_strdup_printf("%s.gemm[%u]", o->path, i);
  return read_dims(o, pair, at, shape, error);
}

/* The optional array KEY of 1 to ROK_HW_MAX_SHAPES WHAT: *array (NULL
 * when absent) and its length. */
static gboolean read_list(const RokJsonObj *o, const char *key, const char *what, json_object **array, gsize *n,
                          GError **error) {
  if (!rok_json_get_array(o, key, FALSE, array, error))
    return FALSE;
  *n = *array != NULL ? json_object_array_length(*array) : 0;
  if (*array != NULL && (*n == 0 || *n > ROK_HW_MAX_SHAPES)) {
    g_autofree char *at = g_strdup_printf("%s.%s", o->path, key);
    rok_json_error(error, o->doc, at, "must hold 1 to %d %s", ROK_HW_MAX_SHAPES, what);
    return FALSE;
  }
  return TRUE;
}

static gboolean read_gemms(const RokJsonObj *o, RokHw *hw, GError **error) {
  json_object *array = NULL;
  gsize n = 0;
  if (!read_list(o, "gemm", "shapes", &array, &n, error))
    return FALSE;
  g_autofree RokHwGemmDims *shapes = g_new0(RokHwGemmDims, MAX(n, 1));
  for (gsize i = 0; i < n; i++)
    if (!read_shape(o, json_object_array_get_idx(array, i), (guint)i, shapes[i].dims, error))
      return FALSE;
  hw->calibrated.gemms = n > 0 ? g_steal_pointer(&shapes) : NULL;
  hw->calibrated.gemms_len = (guint)n;
  return TRUE;
}

static gboolean read_bytes(const RokJsonObj *o, RokHw *hw, GError **error) {
  guint64 bytes[2] = {0, 0};
  gsize len = 0;
  if (!rok_json_get_uint_array(o, "elementwise_bytes", FALSE, G_MAXUINT64, bytes, 2, &len, error))
    return FALSE;
  if (json_object_object_get_ex(o->obj, "elementwise_bytes", NULL) &&
      (len != 2 || bytes[0] == 0 || bytes[1] < bytes[0])) {
    g_autofree char *at = g_strdup_printf("%s.elementwise_bytes", o->path);
    rok_json_error(error, o->doc, at, "must be [smallest, largest]: two whole numbers of bytes, 0 < smallest <= largest");
    return FALSE;
  }
  hw->calibrated.elementwise_bytes[0] = bytes[0];
  hw->calibrated.elementwise_bytes[1] = bytes[1];
  return TRUE;
}

/* One of gemm_ops: {"kind", "shape", "forward" and/or "backward"}. */
static gboolean read_gemm_op(const RokJsonObj *o, json_object *array, gsize i, RokHwGemmOp *op, GError **error) {
  g_auto(RokJsonObj) e = {0};
  op->ns[0] = op->ns[1] = -1;
  if (!rok_json_element(o, "gemm_ops", array, i, &e, error) || !rok_json_only_keys(&e, op_keys, error) ||
      !rok_json_get_string(&e, "kind", TRUE, &op->kind, error))
    return FALSE;
  json_object *shape = NULL;
  g_autofree char *at = g_strconcat(e.path, ".shape", NULL);
  if (!json_object_object_get_ex(e.obj, "shape", &shape)) {
    rok_json_error(error, e.doc, e.path, "must have a \"shape\": [batch, m, n, k]");
    return FALSE;
  }
  if (!read_dims(&e, shape, at, op->dims, error) || !hw_read_latency(&e, "forward", &op->ns[0], error) ||
      !hw_read_latency(&e, "backward", &op->ns[1], error) ||
      !rok_json_get_double(&e, "backward_first", FALSE, ROK_HW_FIRST_KERNEL_MIN, 1 - ROK_HW_FIRST_KERNEL_MIN,
                           &op->backward_first, error))
    return FALSE;
  if (op->ns[0] < 0 && op->ns[1] < 0) {
    rok_json_error(error, e.doc, e.path, "must have a \"forward\" or \"backward\" time");
    return FALSE;
  }
  return TRUE;
}

static gboolean read_gemm_ops(const RokJsonObj *o, RokHw *hw, GError **error) {
  json_object *array = NULL;
  gsize n = 0;
  if (!read_list(o, "gemm_ops", "ops", &array, &n, error))
    return FALSE;
  RokHwGemmOp *ops = g_new0(RokHwGemmOp, MAX(n, 1));
  gsize i = 0;
  gboolean ok = TRUE;
  for (; ok && i < n; i++) {
    ok = read_gemm_op(o, array, i, &ops[i], error);
    const RokHwGemmOp *same = ok ? rok_hw_gemm_op_find(ops, (guint)i, ops[i].kind, ops[i].dims) : NULL;
    if (same != NULL) {
      g_autofree char *at = g_strdup_printf("%s.gemm_ops[%" G_GSIZE_FORMAT "]", o->path, i);
      rok_json_error(error, o->doc, at, "the same kind and shape as gemm_ops[%td]", same - ops);
      ok = FALSE;
    }
  }
  if (!ok) {
    for (gsize j = 0; j < i; j++)
      g_free(ops[j].kind);
    g_free(ops);
    return FALSE;
  }
  hw->calibrated.gemm_ops = n > 0 ? ops : (g_free(ops), NULL);
  hw->calibrated.gemm_ops_len = (guint)n;
  return TRUE;
}

gboolean hw_shapes_read(const RokJsonObj *root, RokHw *hw, GError **error) {
  g_auto(RokJsonObj) o = {0};
  if (!rok_json_child(root, "calibrated_shapes", FALSE, &o, error))
    return FALSE;
  return o.obj == NULL || (rok_json_only_keys(&o, keys, error) && read_gemms(&o, hw, error) &&
                           read_bytes(&o, hw, error) && read_gemm_ops(&o, hw, error));
}

void hw_shapes_to_json(const RokHw *hw, json_object *root) {
  if (hw->calibrated.gemms_len == 0 && hw->calibrated.elementwise_bytes[1] == 0 && hw->calibrated.gemm_ops_len == 0)
    return;
  json_object *o = json_object_new_object();
  if (hw->calibrated.gemms_len > 0) {
    json_object *gemms = json_object_new_array();
    for (guint i = 0; i < hw->calibrated.gemms_len; i++) {
      json_object *shape = json_object_new_array();
      for (guint d = 0; d < 4; d++)
        json_object_array_add(shape, json_object_new_uint64(hw->calibrated.gemms[i].dims[d]));
      json_object_array_add(gemms, shape);
    }
    json_object_object_add(o, "gemm", gemms);
  }
  if (hw->calibrated.elementwise_bytes[1] > 0) {
    json_object *bytes = json_object_new_array();
    json_object_array_add(bytes, json_object_new_uint64(hw->calibrated.elementwise_bytes[0]));
    json_object_array_add(bytes, json_object_new_uint64(hw->calibrated.elementwise_bytes[1]));
    json_object_object_add(o, "elementwise_bytes", bytes);
  }
  if (hw->calibrated.gemm_ops_len > 0) {
    json_object *ops = json_object_new_array();
    for (guint i = 0; i < hw->calibrated.gemm_ops_len; i++) {
      const RokHwGemmOp *op = &hw->calibrated.gemm_ops[i];
      json_object *e = json_object_new_object(), *shape = json_object_new_array();
      json_object_object_add(e, "kind", json_object_new_string(op->kind));
      for (guint d = 0; d < 4; d++)
        json_object_array_add(shape, json_object_new_uint64(op->dims[d]));
      json_object_object_add(e, "shape", shape);
      static const char *const names[2] = {"forward", "backward"};
      for (guint d = 0; d < 2; d++)
        if (op->ns[d] >= 0)
          json_object_object_add(e, names[d], rok_json_new_double((double)op->ns[d] / 1e9));
      if (op->backward_first > 0)
        json_object_object_add(e, "backward_first", rok_json_new_double(op->backward_first));
      json_object_array_add(ops, e);
    }
    json_object_object_add(o, "gemm_ops", ops);
  }
  json_object_object_add(root, "calibrated_shapes", o);
}

const RokHwGemmOp *rok_hw_gemm_op_find(const RokHwGemmOp *ops, guint n, const char *kind, const guint64 dims[4]) {
  for (guint i = 0; i < n; i++)
    if (g_str_equal(ops[i].kind, kind) && memcmp(ops[i].dims, dims, sizeof ops[i].dims) == 0)
      return &ops[i];
  return NULL;
}

gint64 rok_hw_gemm_op_measured(const RokHw *hw, const char *kind, const guint64 dims[4], gboolean backward) {
  const RokHwGemmOp *op = rok_hw_gemm_op_find(hw->calibrated.gemm_ops, hw->calibrated.gemm_ops_len, kind, dims);
  return op != NULL ? op->ns[backward ? 1 : 0] : -1;
}

/* The measured range of dimension d (0 batch … 3 k; 4: the FLOPs). */
static double dimension(const guint64 dims[4], guint d) {
  return d < 4 ? (double)dims[d] : 2.0 * (double)dims[0] * (double)dims[1] * (double)dims[2] * (double)dims[3];
}

gboolean rok_hw_gemm_far(const RokHw *hw, const guint64 dims[4]) {
  if (hw->calibrated.gemms_len == 0)
    return FALSE;
  for (guint d = 1; d < 5; d++) { /* m, n, k and the FLOPs; the batch only through the FLOPs */
    double lo = INFINITY, hi = 0, x = dimension(dims, d);
    for (guint i = 0; i < hw->calibrated.gemms_len; i++) {
      lo = MIN(lo, dimension(hw->calibrated.gemms[i].dims, d));
      hi = MAX(hi, dimension(hw->calibrated.gemms[i].dims, d));
    }
    if (x > 0 && (x < lo / ROK_HW_FAR_FACTOR || x > hi * ROK_HW_FAR_FACTOR))
      return TRUE;
  }
  return FALSE;
}

char *rok_hw_gemm_range_text(const RokHw *hw) {
  if (hw->calibrated.gemms_len == 0)
    return NULL;
  GString *s = g_string_new(NULL);
  static const char *const names[] = {"m", "n", "k"};
  for (guint d = 1; d < 4; d++) {
    guint64 lo = G_MAXUINT64, hi = 0;
    for (guint i = 0; i < hw->calibrated.gemms_len; i++) {
      lo = MIN(lo, hw->calibrated.gemms[i].dims[d]);
      hi = MAX(hi, hw->calibrated.gemms[i].dims[d]);
    }
    g_string_append_printf(s, "%s%s %" G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT, d > 1 ? ", " : "", names[d - 1], lo,
                           hi);
  }
  return g_string_free(s, FALSE);
}
