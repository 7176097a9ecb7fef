/* rok error domain and the mapping from errors to exit codes.
 *
 * Errors cross module boundaries as GError in the ROK_ERROR domain. The code
 * says which exit status the command line gives: bad input of any kind is 2,
 * failures while doing real work are 1, "no plan fits" is 3. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define ROK_ERROR (rok_error_quark())
GQuark rok_error_quark(void);

typedef enum {
  ROK_ERROR_INPUT,     /* a file or option holds a bad value: exit 2 */
  ROK_ERROR_USAGE,     /* the command line itself is wrong: exit 2 */
  ROK_ERROR_FORMAT,    /* a file of an unknown or newer format: exit 2 */
  ROK_ERROR_IO,        /* reading or writing failed at run time: exit 1 */
  ROK_ERROR_DEVICE,    /* the compute device failed: exit 1 */
  ROK_ERROR_INTEGRITY, /* data came back different: exit 1 */
  ROK_ERROR_CANCELLED, /* interrupted by a signal: exit 1 */
  ROK_ERROR_NO_FIT,    /* no plan fits the memory budget: exit 3 */
} RokErrorCode;

enum {
  ROK_EXIT_OK = 0,
  ROK_EXIT_FAILURE = 1,
  ROK_EXIT_INVALID = 2,
  ROK_EXIT_NO_FIT = 3,
};

/* The exit status a command gives for this error (errors of other domains,
 * such as G_FILE_ERROR while writing an output, count as runtime failures). */
int rok_error_exit_code(const GError *error);

G_END_DECLS
