/* What every fuzz target shares (see tests/fuzz/README.md).
 *
 * A target is one file, fuzz-NAME.c, defining LLVMFuzzerTestOneInput() over
 * one reader. Built with libFuzzer (ROK_FUZZ=ON, clang) it fuzzes; built
 * without, replay.c gives it a main() that runs every file of its corpus
 * once, which is how ctest runs it.
 *
 * A target does not only wait for a crash: it aborts (which both builds
 * report as a crash) whenever a reader breaks its contract: a rejection
 * that is not an exit-2 error with a located message, or an accepted input
 * that does not write back to what it read. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "rok/model.h"

/* What messages call the fuzzed document. */
#define ROK_FUZZ_NAME "fuzz.json"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Prints the message and aborts. */
G_NORETURN void rok_fuzz_fail(const char *format, ...) G_GNUC_PRINTF(1, 2);

/* Checks that a reader that returned `ok` set `error` exactly when it
 * failed, and that the error is what bad input must give: ROK_ERROR with a
 * code that exits 2, a UTF-8 message that starts with one of the
 * NULL-terminated `prefixes` ("fuzz.json:", "--set ") and holds no
 * "(null)" (a NULL string printed) unless the input (`data`) does. */
void rok_fuzz_check_result(gboolean ok, const GError *error, const char *const *prefixes, const uint8_t *data,
                           size_t size);

/* The prefixes of messages about a document read under ROK_FUZZ_NAME. */
extern const char *const rok_fuzz_doc_prefixes[];

/* An accepted model config (RokModel, rok/model.h) writes back to itself
 * and makes a trace, which (up to 4000 ops) writes and reads back to the
 * same bytes; aborts otherwise. */
void rok_fuzz_check_model(const RokModel *model);

/* Aborts unless the two texts are equal (round trips). */
void rok_fuzz_check_same(const char *what, const char *expected, const char *found);

/* `data` split at NUL bytes: the first part, and up to `max` more (the rest
 * is dropped), as new NUL-terminated strings in a NULL-terminated vector.
 * Targets use NULs to append command-line overrides to a document; those
 * are made valid UTF-8, as GOption gives them to rok. */
char **rok_fuzz_split(const uint8_t *data, size_t size, guint max);
