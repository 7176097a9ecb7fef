/* main() of a fuzz target built without libFuzzer: runs each file given,
 * and each file of each folder given (in name order), through
 * LLVMFuzzerTestOneInput once. Options ("-runs=0") are accepted and ignored
 * so that ctest runs both builds with the same command line.
 *
 * An input that runs longer than ROK_FUZZ_TIMEOUT seconds (default 30) is
 * killed by SIGALRM: a hang fails the test like a crash. Without
 * AddressSanitizer the address space is capped (ROK_FUZZ_MEMORY_MB, default
 * 4096), so an input that makes a reader allocate absurdly fails too. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define ROK_FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ROK_FUZZ_ASAN 1
#endif
#endif

#ifdef ROK_FUZZ_ASAN
/* AddressSanitizer reserves terabytes of address space, so the cap is its
 * own: abort when the process really uses this much (ASAN_OPTIONS wins). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "hard_rss_limit_mb=4096:max_allocation_size_mb=2048";
}
#endif

static guint64 env_uint(const char *name, guint64 fallback) {
  const char *text = g_getenv(name);
  guint64 value = 0;
  return text != NULL && g_ascii_string_to_unsigned(text, 10, 1, G_MAXUINT32, &value, NULL) ? value : fallback;
}

static void limit_memory(void) {
#ifndef ROK_FUZZ_ASAN
  rlim_t bytes = (rlim_t)env_uint("ROK_FUZZ_MEMORY_MB", 4096) << 20;
  struct rlimit limit = {.rlim_cur = bytes, .rlim_max = bytes};
  if (setrlimit(RLIMIT_AS, &limit) != 0)
    perror("setrlimit");
#endif
}

static gint compare_paths(gconstpointer a, gconstpointer b) {
  return g_strcmp0(*(char *const *)a, *(char *const *)b);
}

/* The files named by `arg`: itself, or the regular files in the folder. */
static void collect(const char *arg, GPtrArray *files) {
  if (!g_file_test(arg, G_FILE_TEST_IS_DIR)) {
    g_ptr_array_add(files, g_strdup(arg));
    return;
  }
  GError *error = NULL;
  GDir *dir = g_dir_open(arg, 0, &error);
  if (dir == NULL)
    rok_fuzz_fail("%s", error->message);
  guint first = files->len;
  for (const char *name; (name = g_dir_read_name(dir)) != NULL;) {
    char *path = g_build_filename(arg, name, NULL);
    if (g_file_test(path, G_FILE_TEST_IS_REGULAR) && name[0] != '.')
      g_ptr_array_add(files, path);
    else
      g_free(path);
  }
  g_dir_close(dir);
  qsort(files->pdata + first, files->len - first, sizeof(gpointer), compare_paths);
}

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  limit_memory();
  GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
  for (int i = 1; i < argc; i++)
    if (argv[i][0] != '-')
      collect(argv[i], files);
  if (files->len == 0) {
    fprintf(stderr, "usage: %s FILE|FOLDER...: no inputs\n", argv[0]);
    return 2;
  }
  unsigned timeout = (unsigned)env_uint("ROK_FUZZ_TIMEOUT", 30);
  double slowest = 0;
  const char *slowest_path = NULL;
  for (guint i = 0; i < files->len; i++) {
    const char *path = g_ptr_array_index(files, i);
    char *data = NULL;
    gsize size = 0;
    GError *error = NULL;
    if (!g_file_get_contents(path, &data, &size, &error))
      rok_fuzz_fail("%s", error->message);
    fprintf(stderr, "%s\n", path); /* the last one named is the culprit of a crash */
    gint64 start = g_get_monotonic_time();
    alarm(timeout);
    LLVMFuzzerTestOneInput((const uint8_t *)data, size);
    alarm(0);
    double seconds = (double)(g_get_monotonic_time() - start) / 1e6;
    if (seconds >= slowest) {
      slowest = seconds;
      slowest_path = path;
    }
    g_free(data);
  }
  printf("%u inputs passed; the slowest took %.3f s (%s)\n", files->len, slowest, slowest_path);
  g_ptr_array_unref(files);
  return 0;
}
