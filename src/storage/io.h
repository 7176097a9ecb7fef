/* The executor's storage layer: one include for the executor and for
 * calibration. Each part has its own header with the details.
 *
 *   staging.h  pinned, page-aligned host slots; a bounded pool whose waits
 *              are counted as "staging" stalls
 *   store.h    tensors as slot-sized chunks striped over one data file per
 *              directory (disk); asynchronous chunk writes and reads
 *   signals.h  SIGINT/SIGTERM/SIGHUP turned into a cancellation callback
 *   backend.h  io_uring (registered buffers and files, O_DIRECT) or psync
 *              threads, with queue depth, short-transfer handling, faults
 *   workdir.h  rok-XXXXXX folders with owner markers; stale-folder sweep
 *   fault.h    $ROK_FAULT fault injection (enospc@write:3, eio@read:1, ...)
 *
 * How the executor drives it:
 *
 *   watch = rok_signal_watch_new(on_signal, ctx, &error);  // first, in main
 *   pool  = rok_staging_new(slot_bytes, hw->host.pinned_buffer, &error);
 *   rok_store_options_init(&o);                // $ROK_FAULT, AUTO backend
 *   o.queue_depth = hw->nvme.queue_depth;
 *   o.reserve_bytes = peak bytes offloaded to disk at once;
 *   store = rok_store_open(dirs, pool, &o, &error);  // sweep, space check
 *   for each note in rok_store_notes(store): print it as a warning
 *
 *   offload of tensor T (device buffer B):
 *     st = rok_store_tensor_new(store, bytes, &error);
 *     for each chunk c:  slot = rok_staging_acquire(pool, -1, &stall_ns);
 *                        enqueue D2H of chunk c of B into rok_staging_slot(pool, slot)
 *                        (a CL_MEM_USE_HOST_PTR buffer over the slot), and on its
 *                        event: rok_store_write(st, c, slot, done, ...)
 *                        done (backend thread): res < 0 -> rok_store_set_error();
 *                        else release the slot (or keep it: host-memory offload)
 *   prefetch: the same backwards: acquire, rok_store_read, H2D on done, release.
 *
 *   on_signal / first error: rok_staging_cancel(pool); rok_store_cancel(store);
 *   then, on every path: rok_store_drain(store); free the tensors;
 *   rok_store_free(store);   // removes the work folders
 *   rok_staging_free(pool); rok_signal_watch_free(watch);
 *
 * Completion callbacks run on the backend's threads: keep them short (hand
 * the result to the executor's I/O thread), never block on the pool there.
 * Inside the hot path errors are -errno; GErrors (ROK_ERROR_IO naming the
 * file, ROK_ERROR_CANCELLED) are made at the edge by rok_store_set_error(). */
#pragma once

#include "rok/storage.h"
#include "rok/storage.h"
#include "rok/storage.h"
