/* Private to src/exec/validate: the parts of rok_validate().
 *
 *   validate.c        options, the result's life, planning the rows
 *   validate-run.c    each row's schedule run and compared; rok_validate
 *   validate-json.c   the summary over the rows, rok-validation/1
 *   validate-chart.c  measured against predicted step time */
#pragma once

#include "rok/validate.h"

/* A row to run: a strategy's plan for a budget. */
typedef struct {
  RokStrategy strategy; /* a baseline or ROK_STRATEGY_ROK */
  guint64 budget;
  RokSimPlan *plan;
} RokValidatePlanned;

RokValidation *rok_validation_new(const RokTrace *trace, const RokHw *hw);
/* The rows in order (RokValidatePlanned *), notes for those left out. */
GPtrArray *rok_validate_plan_rows(const RokTrace *trace, const RokHw *hw, const RokValidateOptions *options,
                                  RokValidation *validation, GError **error);
/* A row's figures from its run's report and schedule. */
void rok_validate_row_fill(RokValidateRow *row, const RokSchedule *schedule);
