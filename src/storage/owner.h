/* Who owns a work folder, and whether that process still runs: the marker
 * format described in workdir.h. */
#pragma once

#include <glib.h>
#include <sys/types.h>

G_BEGIN_DECLS

typedef struct {
  char *host;
  char *boot;     /* "" where /proc does not tell */
  char *pidns;    /* the pid namespace, "pid:[N]"; "" where /proc does not tell */
  pid_t pid;
  guint64 start;  /* 0 where /proc does not tell */
  uid_t uid;
} RokOwner;

typedef enum {
  ROK_OWNER_LIVE,    /* that process still runs: hands off */
  ROK_OWNER_GONE,    /* ours, and its process is gone: stale */
  ROK_OWNER_FOREIGN, /* another host, user or pid namespace: not ours to judge */
} RokOwnerState;

/* The calling process. */
void storage_owner_self(RokOwner *owner);
void storage_owner_clear(RokOwner *owner);

char *storage_owner_to_text(const RokOwner *owner);
/* FALSE for anything that is not a complete marker of this format. */
gboolean storage_owner_parse(const char *text, RokOwner *owner);

/* Compares the marker's owner with SELF (the calling process) and the
 * process table. WHY gets a short reason for ROK_OWNER_GONE. */
RokOwnerState storage_owner_state(const RokOwner *owner, const RokOwner *self, char **why);

G_END_DECLS
