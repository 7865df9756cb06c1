/* The recorder core (include/rdzvscope/recorder_core.h), the trace directory: the expansion
 * of RDZVSCOPE_DIR's placeholders (%h %j %Y %m %d %%) and the making of the directory and
 * its missing parents with the promised mode.
 * libc only, like the rest of the core: no allocation, no locks, no stdio (the shim runs
 * this inside its hooks, in forked and vforked children too). */
#define _GNU_SOURCE

#include "rdzvscope/recorder_core.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---------------------------------------------------------------- placeholders */

/* A job id fit for one path component: [A-Za-z0-9._-] kept, anything else '_', and never
 * "." or "..": a leading '.' becomes '_'. */
static void add_path_safe(struct rdzv_text *t, const char *s) {
  for (size_t i = 0; s && s[i]; ++i) {
    const char c = s[i];
    const int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '-' || c == '_' || (c == '.' && i > 0);
    rdzv_text_ch(t, ok ? c : '_');
  }
}

static void add_two_digits(struct rdzv_text *t, int v) {
  rdzv_text_ch(t, (char)('0' + (v / 10) % 10));
  rdzv_text_ch(t, (char)('0' + v % 10));
}

static void add_job(struct rdzv_text *t, rdzv_env_fn env, void *ctx) {
  const char *job = env(ctx, "SLURM_JOB_ID");
  if (!job || !*job) job = env(ctx, "TORCHELASTIC_RUN_ID");
  if (!job || !*job) job = "nojob";
  add_path_safe(t, job);
}

int rdzv_trace_dir_expand(char *out, size_t cap, const char *pattern, rdzv_env_fn env, void *ctx,
                          const char *host, time_t now) {
  struct rdzv_text t;
  rdzv_text_init(&t, out, cap);
  struct tm day;
  const int have_day = gmtime_r(&now, &day) != NULL;
  for (const char *p = pattern ? pattern : ""; *p; ++p) {
    if (*p != '%' || !p[1]) {
      rdzv_text_ch(&t, *p);
      continue;
    }
    switch (*++p) {
      case 'h': rdzv_text_str(&t, host); break;
      case 'j': add_job(&t, env, ctx); break;
      case 'Y': rdzv_text_i64(&t, have_day ? day.tm_year + 1900 : 0); break;
      case 'm': add_two_digits(&t, have_day ? day.tm_mon + 1 : 0); break;
      case 'd': add_two_digits(&t, have_day ? day.tm_mday : 0); break;
      case '%': rdzv_text_ch(&t, '%'); break;
      default: /* not ours: kept as written */
        rdzv_text_ch(&t, '%');
        rdzv_text_ch(&t, *p);
    }
  }
  return t.truncated ? -1 : 0;
}

/* ---------------------------------------------------------------- directories */

/* One directory level: made with `mode`, or found to be a directory. */
static int ensure_one_dir(const char *dir, mode_t mode) {
  if (mkdir(dir, mode) == 0) {
    chmod(dir, mode); /* as for the files: the umask does not decide what we promised */
    return 0;
  }
  if (errno != EEXIST) return -1;
  struct stat st;
  if (stat(dir, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

int rdzv_trace_dir_ensure(const char *dir, int group_read) {
  const mode_t mode = group_read ? 0750 : 0700;
  /* Parents first (a per-job, per-host layout: BASE/2026/12/01/JOB/HOST). Ranks of one node
   * make them at the same moment: EEXIST from another one's mkdir is success. */
  char path[4096];
  if (rdzv_copy_cut(path, sizeof path, dir) != 0) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
    if (slash[1] == '\0' || slash[-1] == '/') continue;
    *slash = '\0';
    const int made = ensure_one_dir(path, mode);
    *slash = '/';
    if (made != 0) return -1;
  }
  return ensure_one_dir(path, mode);
}
