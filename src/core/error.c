/* The ROK_ERROR domain and its exit codes. */
#include "rok/core.h"

G_DEFINE_QUARK(rok-error-quark, rok_error)

int rok_error_exit_code(const GError *error) {
  if (error == NULL)
    return ROK_EXIT_OK;
  if (error->domain != ROK_ERROR)
    return ROK_EXIT_FAILURE;
  switch ((RokErrorCode)error->code) {
  case ROK_ERROR_INPUT:
  case ROK_ERROR_USAGE:
  case ROK_ERROR_FORMAT:
    return ROK_EXIT_INVALID;
  case ROK_ERROR_NO_FIT:
    return ROK_EXIT_NO_FIT;
  case ROK_ERROR_IO:
  case ROK_ERROR_DEVICE:
  case ROK_ERROR_INTEGRITY:
  case ROK_ERROR_CANCELLED:
    break;
  }
  return ROK_EXIT_FAILURE;
}
