/* The core module: what every other module stands on.
 *
 * Sections: error (the ROK_ERROR domain and the exit codes), units (sizes,
 * rates and times as people write them and as rok prints them), dtype (the
 * element types of tensors), json (reading hand-written JSON with located
 * errors, atomic writing, canonical text), host (what other processes use
 * of the processors), queue (a pop that looks before it sleeps). */
#pragma once

#include <glib.h>
#include <json-c/json.h>

G_BEGIN_DECLS

/* ==== error =============================================================== */

/* rok error domain and the mapping from errors to exit codes.
 *
 * Errors cross module boundaries as GError in the ROK_ERROR domain. The code
 * says which exit status the command line gives: bad input of any kind is 2,
 * failures while doing real work are 1, "no plan fits" is 3. */

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

/* For "did you mean" messages: the name in the NULL-terminated `names`
 * closest to `word` in edits (a swap of neighbours is one edit), when it is
 * within one edit per three characters; else NULL. */
const char *rok_closest_name(const char *word, const char *const *names);

/* ==== units =============================================================== */

/* Sizes, rates and times as people write them and as rok prints them.
 *
 * Base units: bytes (guint64), bytes or operations per second (double),
 * seconds. Parsers accept a plain number in the base unit or a number with a
 * unit, with or without a space between: "40GiB", "1.6TB", "512", "25GB/s",
 * "312e12", "4us", "1.5ms". Decimal prefixes (k or K, M, G, T, P, E) are
 * powers of 1000, binary ones (Ki Mi Gi Ti Pi Ei) powers of 1024. Numbers are
 * read in the C locale whatever the process locale. Parsers reject negative
 * values, NaN, infinities, hex, junk after the unit and values that do not
 * fit the result type; the GError (ROK_ERROR_INPUT) reads
 *   invalid size "40Gx": unknown unit "Gx" (expected B, kB, ...)
 * naming the text and saying why. */

/* A byte count: "40GiB", "1.6TB", "4096", "4096B", "4 KiB". A prefix needs
 * the "B" ("40G" is refused: GB or GiB?). The value is computed exactly
 * from the decimal text, never rounded: fractions are allowed when the
 * product is a whole number of bytes ("1.5KiB", "1.1kB"), otherwise the text
 * is rejected ("1.5B", "0.1KiB"). Up to 2^64-1 bytes ("16EiB" is too much). */
gboolean rok_units_parse_size(const char *text, guint64 *bytes, GError **error);
/* As rok_units_parse_size, forgiving how people type sizes on a command
 * line: a size with a prefix that is not a whole number of bytes
 * ("26.8GiB") is rounded to the nearest byte, and a unit in another case
 * ("30gb", "30gib", "30Gb") is read as the byte unit it spells ("30GB",
 * "30GiB"). *note (when not NULL) gets a sentence saying how the text was
 * read, or NULL when it was read as written: print it. */
gboolean rok_units_parse_size_lenient(const char *text, guint64 *bytes, char **note, GError **error);

/* A rate per second: "25GB/s", "24 GiB/s", "312e12", "312 TFLOP/s",
 * "312TFLOPS". A unit, if any, is a prefix and B or FLOP (any case) ending
 * in "/s", or a prefix and FLOPS. Zero is accepted. */
gboolean rok_units_parse_rate(const char *text, double *per_second, GError **error);

/* A duration, returned in nanoseconds rounded to the nearest (half away
 * from zero): "4us", "4µs", "10ms", "1.5s", "100ns", "2min", "1h"; a plain
 * number is seconds. At most 2^63-1 ns (about 292 years). */
gboolean rok_units_parse_time(const char *text, gint64 *ns, GError **error);

/* A plain finite number, C locale, nothing after it: "0.55", "312e12",
 * "-2" (the sign is the caller's business here). */
gboolean rok_units_parse_number(const char *text, double *value, GError **error);

/* Human forms for tables, all with three significant digits, the same
 * bytes in any locale (newly allocated):
 * - sizes in IEC units: "40.0 GiB", "1.50 KiB"; below 1 KiB the exact count
 *   ("512 B"); just under a unit, "0.977 GiB" rather than "1000 MiB";
 * - rates in SI units: "24.0 GB/s", "2.04 TB/s";
 * - times: "812 ns", "4.00 us" (ASCII "us", so columns line up), "1.23 ms",
 *   "2.50 s", "1.50 min", "1.50 h", "3.00 d", "2.50 y" (Julian years);
 * - counts (parameters, FLOPs): "24" (whole counts below 1000 exactly),
 *   "1.20 k", "340 M", "13.0 B" (billions), "2.00 T".
 * Negative values get a "-", NaN and infinities print as "nan", "inf". */
char *rok_units_format_size(guint64 bytes);
char *rok_units_format_rate(double bytes_per_second);
char *rok_units_format_time(double seconds);
char *rok_units_format_count(double count);

/* ==== dtype =============================================================== */

/* Element types of tensors and their names as configs and traces write them. */
/* Element types of tensors: u8/u16/u32 are dropout masks (mask_bytes wide),
 * i64 token ids, e4m3 the FP8 copies of GEMM inputs that FP8 training
 * saves for backward. */
typedef enum {
  ROK_DTYPE_BF16,
  ROK_DTYPE_FP16,
  ROK_DTYPE_FP32,
  ROK_DTYPE_U8,
  ROK_DTYPE_U16,
  ROK_DTYPE_U32,
  ROK_DTYPE_I64,
  ROK_DTYPE_E4M3,
} RokDtype;

const char *rok_dtype_name(RokDtype dtype);
/* All dtype names, indexed by RokDtype, NULL-terminated. */
const char *const *rok_dtype_names(void);
guint rok_dtype_bytes(RokDtype dtype);

/* ==== json ================================================================ */

/* Reading JSON files people write by hand, with errors that say where.
 *
 * A RokJsonDoc is a parsed file (json-c, strict mode) plus its text, so that
 * any value can be located again as file:line:col when it turns out to be
 * wrong (lines and columns count from 1, columns in characters). Parsing
 * rejects, located at file:line:col: syntax errors (json-c's description),
 * what json-c's strict mode still lets through (NaN, Infinity, 'quotes',
 * "1.", raw control characters in strings), duplicate keys (at the second
 * one), integers that do not fit 64 bits, numbers beyond the double range,
 * invalid UTF-8, NUL bytes, and more than 64 levels of nested values (the
 * top-level value is level 1). An empty file and text after the value are
 * errors too. All of these are ROK_ERROR_INPUT.
 *
 * Typed getters read one member of an object. An absent member is an error
 * when `required`, otherwise the output keeps the default the caller put
 * there. A member that is null is present and of the wrong type. Every wrong
 * value is an error of kind ROK_ERROR_INPUT worded as
 *   configs/models/x.json:12:7: "layers": must be a positive integer, not "forty"
 * Integers that do not fit 64 bits, NaN and infinities are always rejected.
 * Getters cost a hash lookup; positions are only worked out for an error.
 *
 * Command-line overrides (`--set key=value`) are written into the document
 * with rok_json_doc_set(); an error in an overridden value names the option
 * instead of a file position.
 *
 * Writing: rok_json_write_file() writes through rok_file_write() (below),
 * rok_json_to_string() gives the canonical pretty text rok prints. Doubles
 * are written with 17 significant digits, so output is byte-identical
 * across runs. */

typedef struct _RokJsonDoc RokJsonDoc;

/* A missing or unreadable file is ROK_ERROR_INPUT, a failing read ROK_ERROR_IO. */
RokJsonDoc *rok_json_doc_load(const char *path, GError **error);
/* A file's text as rok reads its inputs (JSON, CSV): at most 128 MiB, so
 * /dev/zero or an endless pipe is refused rather than read; NUL-terminated.
 * A missing or unreadable file is ROK_ERROR_INPUT naming it, a failing read
 * ROK_ERROR_IO. */
gboolean rok_json_read_file(const char *path, char **contents, gsize *length, GError **error);
/* `name` is what messages call the text (a path, or "<stdin>"). */
RokJsonDoc *rok_json_doc_parse(const char *name, const char *text, gsize length, GError **error);
void rok_json_doc_free(RokJsonDoc *doc);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokJsonDoc, rok_json_doc_free)

const char *rok_json_doc_name(const RokJsonDoc *doc);
json_object *rok_json_doc_root(const RokJsonDoc *doc);

/* Apply "key=value" to the root object (key may be dotted: "gpu.memory";
 * missing intermediate objects are created). The value is read as a JSON
 * literal when the whole of it is one (8, true, null, 0.5, "x", [1,2],
 * {"a":1}) and as a string otherwise (flash, 40GiB, NaN). `origin` is how
 * messages name it, e.g. "--set micro_batch=8"; errors later found in the
 * value read "--set micro_batch=abc: "micro_batch": must be ...". Fails with
 * ROK_ERROR_USAGE on a malformed assignment ("=3", "x", "a..b=1") or a key
 * through a non-object, ROK_ERROR_INPUT on a literal that does not fit (an
 * integer beyond 64 bits); a failed call changes nothing. Apply overrides
 * before reading: a replaced member frees the json_object it held. */
gboolean rok_json_doc_set(RokJsonDoc *doc, const char *assignment, const char *origin, GError **error);

/* Set `error` (ROK_ERROR_INPUT) to a message about the value at `path`
 * ("gpu.memory", "ops[3].inputs[0]"; "" for the whole document):
 *   file:line:col: "path": message     where the value starts in the text
 *   --set x=1: "path": message         when an override set it
 *   file: "path": message              when it is not in the text
 *   file: message                      for ""
 * The text is only searched here, when an error is reported. Keys holding
 * '.' or '[' cannot be located. */
void rok_json_error(GError **error, const RokJsonDoc *doc, const char *path, const char *format, ...)
    G_GNUC_PRINTF(4, 5);

/* One object inside a document, with its path for messages. The functions
 * below fill an `out` without clearing it first (it may be uninitialised):
 * clear it (rok_json_obj_clear, or g_auto with = {0}) before filling it
 * again. On failure `out` is left as it was. obj == NULL stands for an
 * absent optional object: all its members are absent. */
typedef struct {
  const RokJsonDoc *doc;
  json_object *obj;
  char *path; /* "" for the root, "gpu", "ops[3]"; owned */
} RokJsonObj;

void rok_json_obj_clear(RokJsonObj *obj);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(RokJsonObj, rok_json_obj_clear)

/* The root, which must be an object. */
gboolean rok_json_root(const RokJsonDoc *doc, RokJsonObj *out, GError **error);
/* Member `key` of `parent`, which must be an object. Returns FALSE on error;
 * when absent and not required returns TRUE with out->obj == NULL (and the
 * path set). `out` may be `parent` itself. */
gboolean rok_json_child(const RokJsonObj *parent, const char *key, gboolean required, RokJsonObj *out,
                        GError **error);
/* Element `index` of the array member `key` (which the caller got with
 * rok_json_get_array), which must be an object. */
gboolean rok_json_element(const RokJsonObj *parent, const char *key, json_object *array, gsize index,
                          RokJsonObj *out, GError **error);

/* Reject members not in the NULL-terminated list `keys`: a typo must not be
 * silently ignored. The message is located at the unknown key, names it and
 * suggests a close known key ("unknown key; did you mean "memory"?") or
 * else lists the known ones. */
gboolean rok_json_only_keys(const RokJsonObj *obj, const char *const *keys, GError **error);

/* Typed getters. Each returns FALSE and sets `error` when the member is
 * present but wrong, or absent and `required`; `*out` changes only on
 * success. Integer getters take integer literals only (8, not 8.0); the
 * range in the message comes from min and max ("must be an integer from 0
 * to 3", "must be a positive integer"). */
gboolean rok_json_get_string(const RokJsonObj *obj, const char *key, gboolean required, char **out,
                             GError **error); /* *out is replaced by a new string */
gboolean rok_json_get_enum(const RokJsonObj *obj, const char *key, gboolean required,
                           const char *const *names, int *out, GError **error); /* index in names */
gboolean rok_json_get_bool(const RokJsonObj *obj, const char *key, gboolean required, gboolean *out,
                           GError **error);
gboolean rok_json_get_uint(const RokJsonObj *obj, const char *key, gboolean required, guint64 min,
                           guint64 max, guint64 *out, GError **error); /* integer literal */
gboolean rok_json_get_int(const RokJsonObj *obj, const char *key, gboolean required, gint64 min,
                          gint64 max, gint64 *out, GError **error);
gboolean rok_json_get_double(const RokJsonObj *obj, const char *key, gboolean required, double min,
                             double max, double *out, GError **error); /* finite, min <= x <= max */
/* Sizes, rates and times: a number in base units or a string with units
 * (see units.h; its message is passed on). Sizes must be positive whole
 * numbers of bytes (4e9 is fine), rates positive and finite, times (seconds
 * when a number) non-negative and within gint64 nanoseconds. */
gboolean rok_json_get_size(const RokJsonObj *obj, const char *key, gboolean required, guint64 *bytes,
                           GError **error);
gboolean rok_json_get_rate(const RokJsonObj *obj, const char *key, gboolean required, double *per_second,
                           GError **error);
gboolean rok_json_get_time(const RokJsonObj *obj, const char *key, gboolean required, gint64 *ns,
                           GError **error);
/* An array member; *out is borrowed from the document (NULL when absent). */
gboolean rok_json_get_array(const RokJsonObj *obj, const char *key, gboolean required, json_object **out,
                            GError **error);
/* An array of integers each in [0, max], appended to `out` (GArray of
 * guint); on error nothing is appended and the message names the element
 * ("ops[3].inputs[1]"). */
gboolean rok_json_get_index_array(const RokJsonObj *obj, const char *key, gboolean required, guint max,
                                  GArray *out, GError **error);

/* An array of at most `capacity` integers each in [0, max], into `out`;
 * *length is how many there were. */
gboolean rok_json_get_uint_array(const RokJsonObj *obj, const char *key, gboolean required, guint64 max,
                                 guint64 *out, gsize capacity, gsize *length, GError **error);

/* Check a file's "format" member: it must equal `expected` ("rok-trace/1").
 * Anything else, a missing member and newer versions included, is
 * ROK_ERROR_FORMAT, saying what was expected and what was found. */
gboolean rok_json_check_format(const RokJsonObj *root, const char *expected, GError **error);

/* Writing. Doubles keep 17 significant digits ("%.17g", "2.0" for whole
 * numbers, whatever json-c's global format or the locale); non-finite
 * doubles give NULL, which is json-c's null (json-c would write NaN, which
 * is not JSON). */
json_object *rok_json_new_double(double value);
/* Canonical text: two-space pretty print, no escaped slashes, final newline. */
char *rok_json_to_string(json_object *value);
/* Write the canonical text to `path` with rok_file_write(). */
gboolean rok_json_write_file(json_object *value, const char *path, GError **error);

/* ==== output files ======================================================== */

/* Every file and folder rok writes for the user goes through here.
 *
 * A regular file, or a name that does not exist yet, is written into a
 * temporary file beside it and renamed over it (synced first when it
 * replaces a file): a reader sees the old contents or the new, and a
 * failure leaves the old. What exists and is not a regular file is never
 * replaced: a character device or a FIFO is written through (a FIFO no
 * process reads is an error, not a hang); a directory, a block device or a
 * socket is refused. A symbolic link is followed (refused when it leads
 * nowhere). Errors are ROK_ERROR_IO naming the path as given: "cannot write
 * PATH: why".
 *
 * A folder (`-o DIR`) is all or nothing: rok_output_dir_begin() gives a
 * temporary folder to write the files in, rok_output_dir_commit() puts them
 * all in DIR or none (files of DIR that rok did not write stay), and
 * rok_output_dir_discard() drops them.
 *
 * The temporaries that exist are listed; rok_output_discard_all(), called
 * on SIGINT/SIGTERM/SIGHUP, removes them all (it waits for a folder's swap
 * in progress), after which nothing more is put in place. */

typedef struct _RokOutput RokOutput;
RokOutput *rok_output_open(const char *path, GError **error);
int rok_output_fd(const RokOutput *out);
const char *rok_output_path(const RokOutput *out);
gboolean rok_output_write(RokOutput *out, const void *data, gsize length, GError **error);
/* Closes (and renames into place); frees `out` either way. */
gboolean rok_output_commit(RokOutput *out, GError **error);
void rok_output_discard(RokOutput *out);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokOutput, rok_output_discard)
/* The whole file at once. */
gboolean rok_file_write(const char *path, const void *data, gsize length, GError **error);

typedef struct _RokOutputDir RokOutputDir;
RokOutputDir *rok_output_dir_begin(const char *dir, GError **error);
/* The temporary folder to write the files in. */
const char *rok_output_dir_path(const RokOutputDir *dir);
/* Frees `dir` either way. */
gboolean rok_output_dir_commit(RokOutputDir *dir, GError **error);
void rok_output_dir_discard(RokOutputDir *dir);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokOutputDir, rok_output_dir_discard)

void rok_output_discard_all(void);

/* ==== host ================================================================ */

/* Processor seconds other processes have used since boot on the
 * processors this process may run on (its affinity, as
 * g_get_num_processors counts them): their busy time in /proc/stat (user,
 * nice, system, irq, softirq, steal) less this process's own (which ran
 * only there); negative where it cannot be read. The difference
 * over an interval is what other work took from the processors then. (The
 * load average is no substitute: it also counts tasks waiting on a disk,
 * a virtual one's host threads included.) */
double rok_host_others_cpu_seconds(void);
/* Processor seconds this process has used (user and system, all its
 * threads; getrusage), negative where it cannot be read. */
double rok_host_own_cpu_seconds(void);
/* CLOCK_MONOTONIC in nanoseconds: the clock every measured instant of a
 * step (an action's start and end, an I/O completion) is read on. */
gint64 rok_host_now_ns(void);
/* How soon a thread that sleeps on I/O or hand-offs runs when it wakes
 * beside threads that compute (a CPU device's kernels), weakest first. */
typedef enum {
  ROK_HOST_WAKE_FAIR,        /* the fair class as it is: it may wait up to a scheduler tick */
  ROK_HOST_WAKE_SHORT_SLICE, /* a short slice (Linux 6.12 and later): an early deadline, still fair */
  ROK_HOST_WAKE_REALTIME,    /* the lowest real-time priority: it runs at once */
} RokHostWake;
/* Asks for the calling thread the soonest the process may have: the
 * lowest real-time priority (SCHED_FIFO 1, children reset to the fair
 * class) where root, CAP_SYS_NICE or `ulimit -r` allow it and the host
 * has more than one processor, else a short slice; says which it got. */
RokHostWake rok_host_thread_prompt(void);
const char *rok_host_wake_name(RokHostWake wake);
/* For threads beside a CPU device's kernels that got `wake`: why it is
 * not real-time and what that costs, in words (NULL where it is). */
char *rok_host_wake_note(RokHostWake wake);
/* Their share of the processors since `others_start` (a value of the
 * function above), over `wall_s` seconds: 0 to 1; negative: unknown. */
double rok_host_others_share(double others_start, double wall_s);
/* Other processes' share of the processors above which a measuring
 * command (calibrate, validate) says the machine was busy. */
#define ROK_HOST_BUSY_SHARE 0.05

/* ==== queue =============================================================== */

/* g_async_queue_pop, but looking for a message for `spin_us` microseconds
 * (yielding the processor in between) before sleeping: for a thread whose
 * next message usually follows within microseconds, and would otherwise
 * pay a wake-up for each (tens of microseconds on a virtual machine). */
gpointer rok_async_queue_pop_soon(GAsyncQueue *queue, gint64 spin_us);
/* The executor's compute thread looks this long; rok calibrate times the
 * executor's hand-off to it the same way. */
#define ROK_COMPUTE_SPIN_US 100
/* The executor launches a kernel of more work than this many seconds at
 * the device's rate as launches of about that much (rok/device.h,
 * rok_cl_kernels_set_cancel); on a CPU device the simulator's copies wait
 * for the launch in progress, not the kernel (sim_kernel_until). */
#define ROK_KERNEL_CHUNK_SECONDS 0.02

G_END_DECLS
