/* Fault injection for the storage layer's tests.
 *
 * A spec lists faults as KIND@OP:N, separated by commas; the N-th operation
 * of kind OP (counted from 1 over the whole store, in submission order) gets
 * the fault:
 *
 *   enospc@write:N   the write fails with ENOSPC and writes nothing
 *   eio@write:N      the write fails with EIO and writes nothing
 *   eio@read:N       the read fails with EIO and reads nothing
 *   short@write:N    the write's first attempt moves only about half the
 *   short@read:N     bytes, so the short-transfer path must finish it
 *   corrupt@read:N   one byte of the file is flipped on disk just before the
 *                    read is issued (what the executor's checksums must catch)
 *   nodirect@open:N  the N-th data-file open is refused O_DIRECT (EINVAL),
 *                    as tmpfs-like file systems do: buffered fallback
 *
 * The store reads the spec from its options (the command line passes
 * $ROK_FAULT). It is always compiled in; an unset spec is a NULL RokFault and
 * costs one pointer test per request. Resubmissions of a short transfer are
 * not new operations and are not counted. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  ROK_FAULT_OP_WRITE,
  ROK_FAULT_OP_READ,
  ROK_FAULT_OP_OPEN,
  ROK_FAULT_N_OPS,
} RokFaultOp;

typedef enum {
  ROK_FAULT_NONE,
  ROK_FAULT_ENOSPC,
  ROK_FAULT_EIO,
  ROK_FAULT_SHORT,
  ROK_FAULT_CORRUPT,
  ROK_FAULT_NODIRECT,
} RokFaultKind;

typedef struct _RokFault RokFault;

/* Parses SPEC (NULL or "" means no faults: *fault = NULL, returns TRUE).
 * A bad spec is ROK_ERROR_INPUT naming the item and what was expected. */
gboolean rok_fault_parse(const char *spec, RokFault **fault, GError **error);
void rok_fault_free(RokFault *fault);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokFault, rok_fault_free)

/* Counts one more operation of kind OP and returns the fault it must suffer
 * (ROK_FAULT_NONE for most). Thread-safe; FAULT may be NULL. */
RokFaultKind rok_fault_next(RokFault *fault, RokFaultOp op);

/* The -errno an error fault stands for (0 for the others). */
int rok_fault_errno(RokFaultKind kind);

G_END_DECLS
