/* Private to src/search: the farm, which runs numbered tasks on threads
 * and, with MPI, on other ranks, and gathers their results on rank 0.
 *
 * Tasks are handed out one at a time in a given order (dynamic balance:
 * a rank asks for the next when it has finished one), so slow tasks do not
 * hold up a fixed share. Results are handed to `done` on the gathering
 * process under the farm's lock, each with its task's number; callers
 * store them by number, so the outcome never depends on who ran what.
 * `wanted`, asked under the same lock before a task is handed out, may
 * skip a task that the results so far make useless (pruning). */
#pragma once

#include "rok/search.h"

typedef GBytes *(*FarmWork)(guint task, gpointer data, GError **error);
typedef gboolean (*FarmWanted)(guint task, gpointer data);
/* Takes `result` and `error` (one of them NULL). */
typedef void (*FarmDone)(guint task, GBytes *result, GError *error, gpointer data);

typedef struct {
  const char *phase; /* for progress */
  guint count;
  const guint *order; /* count tasks, the order to hand them out; NULL: 0 .. count-1 */
  FarmWork work;
  FarmWanted wanted; /* NULL: every task */
  FarmDone done;
  gpointer data;
} Farm;

/* The dispatcher's state on the gathering process. */
typedef struct _FarmQueue FarmQueue;

FarmQueue *farm_queue_new(const Farm *farm, const RokSearchRunner *runner);
void farm_queue_free(FarmQueue *queue);
/* The next task to run; FALSE when none is left. `wait`: block while
 * tasks are out that might come back (a rank given up), else return FALSE
 * at once when nothing is ready. */
gboolean farm_queue_next(FarmQueue *queue, gboolean wait, guint *task);
void farm_queue_complete(FarmQueue *queue, guint task, GBytes *result, GError *error);
/* A task handed out that will not come back: hand it out again. */
void farm_queue_return(FarmQueue *queue, guint task);
/* Every task done or skipped. */
gboolean farm_queue_finished(FarmQueue *queue);
/* Run one task through the farm's work function and complete it. */
void farm_queue_run(FarmQueue *queue, guint task);
/* Start `threads` local workers that take tasks until the queue is
 * finished; join them with farm_workers_join. */
GPtrArray *farm_workers_start(FarmQueue *queue, guint threads);
void farm_workers_join(GPtrArray *workers);

/* Run the farm: with runner->mpi on every rank (TRUE on rank 0 once all
 * results are in, *root FALSE elsewhere), else on local threads. */
gboolean farm_run(const Farm *farm, const RokSearchRunner *runner, gboolean *root, GError **error);
/* The MPI part (farm-mpi.c): rank 0 serves tasks to the others and runs
 * local workers; other ranks run what they are given. */
gboolean farm_mpi_run(const Farm *farm, const RokSearchRunner *runner, gboolean *root, GError **error);
/* Set once a rank was given up (MPI cannot finalize around it). */
gboolean farm_mpi_abandoned(void);
