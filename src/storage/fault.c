/* Fault injection: parsing ROK_FAULT-style specs and counting operations. */
#include "rok/storage.h"

#include <errno.h>
#include <string.h>

#include "rok/core.h"

typedef struct {
  RokFaultKind kind;
  RokFaultOp op;
  guint nth;
} RokFaultItem;

struct _RokFault {
  GArray *items;                 /* RokFaultItem */
  gint counts[ROK_FAULT_N_OPS];  /* operations seen so far, atomically */
};

static const char *const kind_names[] = {
  [ROK_FAULT_ENOSPC] = "enospc", [ROK_FAULT_EIO] = "eio", [ROK_FAULT_SHORT] = "short",
  [ROK_FAULT_CORRUPT] = "corrupt", [ROK_FAULT_NODIRECT] = "nodirect",
};
static const char *const op_names[] = {
  [ROK_FAULT_OP_WRITE] = "write", [ROK_FAULT_OP_READ] = "read", [ROK_FAULT_OP_OPEN] = "open",
};

/* Which operations each kind of fault makes sense for. */
static gboolean kind_allows(RokFaultKind kind, RokFaultOp op) {
  switch (kind) {
  case ROK_FAULT_ENOSPC:
    return op == ROK_FAULT_OP_WRITE;
  case ROK_FAULT_EIO:
  case ROK_FAULT_SHORT:
    return op == ROK_FAULT_OP_WRITE || op == ROK_FAULT_OP_READ;
  case ROK_FAULT_CORRUPT:
    return op == ROK_FAULT_OP_READ;
  case ROK_FAULT_NODIRECT:
    return op == ROK_FAULT_OP_OPEN;
  case ROK_FAULT_NONE:
    break;
  }
  return FALSE;
}

static int lookup(const char *const *names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (names[i] != NULL && g_str_equal(names[i], name))
      return i;
  return -1;
}

static gboolean parse_item(const char *text, RokFaultItem *item, GError **error) {
  const char *at = strchr(text, '@');
  const char *colon = at != NULL ? strchr(at, ':') : NULL;
  if (at == NULL || colon == NULL) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "fault \"%s\": expected KIND@OP:N, e.g. enospc@write:3", text);
    return FALSE;
  }
  g_autofree char *kind = g_strndup(text, at - text);
  g_autofree char *op = g_strndup(at + 1, colon - at - 1);
  int k = lookup(kind_names, G_N_ELEMENTS(kind_names), kind);
  int o = lookup(op_names, G_N_ELEMENTS(op_names), op);
  if (k < 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "fault \"%s\": unknown kind \"%s\" (expected enospc, eio, short, corrupt or nodirect)",
                text, kind);
    return FALSE;
  }
  if (o < 0 || !kind_allows(k, o)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "fault \"%s\": %s does not apply to \"%s\"",
                text, kind, op);
    return FALSE;
  }
  guint64 nth = 0;
  if (!g_ascii_string_to_unsigned(colon + 1, 10, 1, G_MAXINT, &nth, NULL)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "fault \"%s\": \"%s\" is not a count from 1 (the N-th operation)", text, colon + 1);
    return FALSE;
  }
  *item = (RokFaultItem){ .kind = k, .op = o, .nth = (guint)nth };
  return TRUE;
}

gboolean rok_fault_parse(const char *spec, RokFault **fault, GError **error) {
  *fault = NULL;
  if (spec == NULL || *spec == '\0')
    return TRUE;
  g_autoptr(RokFault) parsed = g_new0(RokFault, 1);
  parsed->items = g_array_new(FALSE, FALSE, sizeof(RokFaultItem));
  g_auto(GStrv) parts = g_strsplit(spec, ",", -1);
  for (char **p = parts; *p != NULL; p++) {
    RokFaultItem item;
    g_autofree char *text = g_strstrip(g_strdup(*p));
    if (!parse_item(text, &item, error)) {
      g_prefix_error(error, "ROK_FAULT=%s: ", spec);
      return FALSE;
    }
    g_array_append_val(parsed->items, item);
  }
  *fault = g_steal_pointer(&parsed);
  return TRUE;
}

void rok_fault_free(RokFault *fault) {
  if (fault == NULL)
    return;
  if (fault->items != NULL)
    g_array_unref(fault->items);
  g_free(fault);
}

RokFaultKind rok_fault_next(RokFault *fault, RokFaultOp op) {
  if (G_LIKELY(fault == NULL))
    return ROK_FAULT_NONE;
  guint nth = (guint)g_atomic_int_add(&fault->counts[op], 1) + 1;
  for (guint i = 0; i < fault->items->len; i++) {
    const RokFaultItem *item = &g_array_index(fault->items, RokFaultItem, i);
    if (item->op == op && item->nth == nth)
      return item->kind;
  }
  return ROK_FAULT_NONE;
}

int rok_fault_errno(RokFaultKind kind) {
  switch (kind) {
  case ROK_FAULT_ENOSPC:
    return -ENOSPC;
  case ROK_FAULT_EIO:
    return -EIO;
  default:
    return 0;
  }
}
