/* Owner markers of work folders: writing, parsing, and telling a dead
 * owner from a live one. */
#include "owner.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define MARKER_FORMAT "rok-workdir/1"
#define ALL_KEYS 0x3fu /* host, boot, pid, start, uid, pidns */

/* Start time of PID (clock ticks since boot, /proc/PID/stat field 22):
 * 1 when found, 0 when there is no such process, -1 when /proc cannot
 * tell. */
static int proc_start_time(pid_t pid, guint64 *start) {
  g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
  g_autofree char *text = NULL;
  g_autoptr(GError) error = NULL;
  if (!g_file_get_contents(path, &text, NULL, &error))
    return g_error_matches(error, G_FILE_ERROR, G_FILE_ERROR_NOENT) &&
                   g_file_test("/proc/self/stat", G_FILE_TEST_EXISTS)
               ? 0
               : -1;
  /* The command name (field 2) may hold spaces and parentheses: the fields
   * after it start behind the last ')'. Field 3 is the first of them. */
  const char *p = strrchr(text, ')');
  if (p == NULL)
    return -1;
  g_auto(GStrv) fields = g_strsplit(p + 2, " ", 0);
  if (g_strv_length(fields) < 20)
    return -1;
  return g_ascii_string_to_unsigned(fields[22 - 3], 10, 0, G_MAXUINT64, start, NULL) ? 1 : -1;
}

void storage_owner_self(RokOwner *owner) {
  g_autofree char *boot = NULL;
  if (!g_file_get_contents("/proc/sys/kernel/random/boot_id", &boot, NULL, NULL))
    boot = g_strdup("");
  owner->host = g_strdup(g_get_host_name());
  owner->boot = g_strdup(g_strstrip(boot));
  owner->pidns = g_file_read_link("/proc/self/ns/pid", NULL);
  if (owner->pidns == NULL)
    owner->pidns = g_strdup("");
  owner->pid = getpid();
  owner->uid = getuid();
  if (proc_start_time(owner->pid, &owner->start) != 1)
    owner->start = 0;
}

void storage_owner_clear(RokOwner *owner) {
  g_clear_pointer(&owner->host, g_free);
  g_clear_pointer(&owner->boot, g_free);
  g_clear_pointer(&owner->pidns, g_free);
}

char *storage_owner_to_text(const RokOwner *owner) {
  return g_strdup_printf(MARKER_FORMAT "\nhost=%s\nboot=%s\npid=%d\nstart=%" G_GUINT64_FORMAT
                                       "\nuid=%u\npidns=%s\n",
                         owner->host, owner->boot, (int)owner->pid, owner->start,
                         (unsigned)owner->uid, owner->pidns);
}

static gboolean parse_number(const char *text, guint64 max, guint64 *value) {
  return g_ascii_string_to_unsigned(text, 10, 0, max, value, NULL);
}

/* One "key=value" line into OWNER; FALSE for a line that does not belong
 * (unknown or repeated key, bad value). */
static gboolean parse_line(const char *line, RokOwner *owner, guint *seen) {
  static const char *const keys[] = { "host", "boot", "pid", "start", "uid", "pidns" };
  g_auto(GStrv) kv = g_strsplit(line, "=", 2);
  if (kv[0] == NULL || kv[1] == NULL)
    return FALSE;
  guint k = 0;
  while (k < G_N_ELEMENTS(keys) && !g_str_equal(kv[0], keys[k]))
    k++;
  if (k == G_N_ELEMENTS(keys) || (*seen & (1u << k)) != 0)
    return FALSE;
  *seen |= 1u << k;
  const char *v = kv[1];
  guint64 n = 0;
  switch (k) {
  case 0:
    owner->host = g_strdup(v);
    return *v != '\0';
  case 1:
    owner->boot = g_strdup(v);
    return TRUE;
  case 2:
    if (!parse_number(v, G_MAXINT32, &n) || n == 0)
      return FALSE;
    owner->pid = (pid_t)n;
    return TRUE;
  case 3:
    return parse_number(v, G_MAXUINT64, &owner->start);
  case 4:
    if (!parse_number(v, G_MAXUINT32, &n))
      return FALSE;
    owner->uid = (uid_t)n;
    return TRUE;
  default:
    owner->pidns = g_strdup(v);
    return TRUE;
  }
}

gboolean storage_owner_parse(const char *text, RokOwner *owner) {
  *owner = (RokOwner){ 0 };
  g_auto(GStrv) lines = g_strsplit(text, "\n", 0);
  if (lines[0] == NULL || !g_str_equal(lines[0], MARKER_FORMAT))
    return FALSE;
  guint seen = 0;
  for (char **l = lines + 1; *l != NULL; l++)
    if (**l != '\0' && !parse_line(*l, owner, &seen)) {
      storage_owner_clear(owner);
      return FALSE;
    }
  if (seen != ALL_KEYS) {
    storage_owner_clear(owner);
    return FALSE;
  }
  return TRUE;
}

RokOwnerState storage_owner_state(const RokOwner *owner, const RokOwner *self, char **why) {
  *why = NULL;
  if (!g_str_equal(owner->host, self->host) || owner->uid != self->uid)
    return ROK_OWNER_FOREIGN;
  if (*owner->boot != '\0' && *self->boot != '\0' && !g_str_equal(owner->boot, self->boot)) {
    *why = g_strdup_printf("pid %d ran before the machine last booted", (int)owner->pid);
    return ROK_OWNER_GONE;
  }
  /* A process in another pid namespace (another container on this kernel)
   * cannot be looked up from here: its pid says nothing. */
  if (*owner->pidns != '\0' && *self->pidns != '\0' && !g_str_equal(owner->pidns, self->pidns))
    return ROK_OWNER_FOREIGN;
  guint64 start = 0;
  int found = proc_start_time(owner->pid, &start);
  if (found < 0) /* no /proc: only whether the pid exists can be checked */
    found = (kill(owner->pid, 0) == 0 || errno == EPERM) ? 1 : 0;
  if (found == 0) {
    *why = g_strdup_printf("pid %d is gone", (int)owner->pid);
    return ROK_OWNER_GONE;
  }
  if (owner->start != 0 && start != 0 && start != owner->start) {
    *why = g_strdup_printf("pid %d is now another process", (int)owner->pid);
    return ROK_OWNER_GONE;
  }
  return ROK_OWNER_LIVE;
}
