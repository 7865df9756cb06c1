/* rdzvscope SPANK plugin: trace a Slurm job's rendezvous without touching its job script.
 *
 *   srun --rdzvscope=/shared/rdzv ...     sbatch --rdzvscope=/shared/rdzv job.sh
 *
 * In every task of a job that opted in, the plugin prepends librdzvscope.so to LD_PRELOAD
 * (existing entries stay) and sets RDZVSCOPE_DIR, by default DIR/%Y/%m/%d/%j (the shim
 * expands the placeholders in each process: the job's date, the job id). For jobs run in an
 * Apptainer/Singularity container it also sets APPTAINERENV_* / SINGULARITYENV_* (LD_PRELOAD,
 * RDZVSCOPE_DIR) and adds the trace directory and the shim to APPTAINER_BIND /
 * SINGULARITY_BIND.
 *
 * plugstack.conf:
 *
 *   optional /usr/local/lib/rdzvscope_spank.so [default=DIR] [exclude=PROG,...] [shim=PATH]
 *                                               [layout=SUFFIX]
 *
 *   default=DIR     every job is traced into DIR unless it says --rdzvscope=off
 *   exclude=P1,P2   tasks whose program (the basename of argv[0]) is one of these are left alone
 *   shim=PATH       librdzvscope.so (default: the one installed beside this plugin at build time)
 *   layout=SUFFIX   appended to a DIR without placeholders (default %Y/%m/%d/%j)
 *
 * --rdzvscope without DIR takes default=DIR, else rdzvscope-%j in the task's working
 * directory. A DIR that holds a placeholder (%h %j %Y %m %d) is used as it is. The plugin never
 * fails a task: a problem is logged and the task runs untraced.
 *
 * Only libc, the SPANK API (resolved in srun/sbatch/slurmstepd at load time) and the recorder
 * core (core/, linked in statically, its symbols hidden: the trace directory's rules, the
 * same as the shim's and rdzvscope attach's). C11.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "rdzvscope/recorder_core.h"

SPANK_PLUGIN(rdzvscope, 1)

#ifndef RDZVSCOPE_SHIM_DEFAULT
#define RDZVSCOPE_SHIM_DEFAULT "/usr/local/lib/librdzvscope.so"
#endif
#define DEFAULT_LAYOUT "%Y/%m/%d/%j"
#define VALUE_MAX 4096

static char opt_value[PATH_MAX]; /* --rdzvscope's argument ("" when given without one) */
static int opt_given;            /* --rdzvscope was given */
static int opt_off;              /* --rdzvscope=off|no|none */
static char conf_default[PATH_MAX];
static char conf_shim[PATH_MAX] = RDZVSCOPE_SHIM_DEFAULT;
static char conf_layout[256] = DEFAULT_LAYOUT;
static char conf_exclude[1024];

static int copy_value(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n >= cap) return -1;
  memcpy(dst, src, n + 1);
  return 0;
}

static int is_off(const char *v) {
  return strcmp(v, "off") == 0 || strcmp(v, "no") == 0 || strcmp(v, "none") == 0 ||
         strcmp(v, "0") == 0;
}

static int option_cb(int val, const char *optarg, int remote) {
  (void)val;
  (void)remote;
  opt_given = 1;
  opt_off = 0;
  opt_value[0] = '\0';
  if (optarg == NULL || optarg[0] == '\0') return 0;
  if (is_off(optarg)) {
    opt_off = 1;
    return 0;
  }
  if (copy_value(opt_value, sizeof opt_value, optarg) != 0) {
    slurm_error("rdzvscope: --rdzvscope=DIR: DIR is longer than %d bytes", PATH_MAX - 1);
    return -1;
  }
  return 0;
}

static struct spank_option rdzv_option = {
    "rdzvscope", "[DIR]",
    "Trace the job's rendezvous (resolver, connects, store sockets) with rdzvscope into DIR "
    "(default: the site's, else ./rdzvscope-JOBID); =off: do not trace",
    2, 0, option_cb};

/* plugstack.conf arguments */
static int parse_args(int ac, char **av) {
  for (int i = 0; i < ac; i++) {
    const char *a = av[i];
    int bad = 0;
    if (strncmp(a, "default=", 8) == 0) {
      bad = copy_value(conf_default, sizeof conf_default, a + 8);
    } else if (strncmp(a, "exclude=", 8) == 0) {
      bad = copy_value(conf_exclude, sizeof conf_exclude, a + 8);
    } else if (strncmp(a, "shim=", 5) == 0) {
      bad = copy_value(conf_shim, sizeof conf_shim, a + 5);
    } else if (strncmp(a, "layout=", 7) == 0) {
      bad = copy_value(conf_layout, sizeof conf_layout, a + 7);
    } else {
      slurm_error("rdzvscope: unknown plugstack.conf argument '%s' (default=DIR, exclude=P,..., "
                  "shim=PATH, layout=SUFFIX)", a);
      return -1;
    }
    if (bad) {
      slurm_error("rdzvscope: plugstack.conf argument '%s' is too long", a);
      return -1;
    }
  }
  return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av) {
  if (parse_args(ac, av) != 0) return -1;
  spank_context_t ctx = spank_context();
  if (ctx == S_CTX_LOCAL || ctx == S_CTX_REMOTE || ctx == S_CTX_ALLOCATOR) {
    if (spank_option_register(sp, &rdzv_option) != ESPANK_SUCCESS) {
      slurm_error("rdzvscope: cannot register --rdzvscope");
      return -1;
    }
  }
  return 0;
}

/* Is `name` one of the comma-separated entries of `list`? */
static int in_list(const char *list, const char *name) {
  size_t n = strlen(name);
  const char *p = list;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && n > 0 && strncmp(p, name, n) == 0) return 1;
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

/* Does the colon/space separated list `list` hold `item`? */
static int has_entry(const char *list, const char *item) {
  size_t n = strlen(item);
  const char *p = list;
  while (*p) {
    while (*p == ':' || *p == ' ') p++;
    size_t len = strcspn(p, ": ");
    if (len == n && strncmp(p, item, n) == 0) return 1;
    p += len;
  }
  return 0;
}

/* var = first + sep + (its current value), unless the current value already holds `first`. */
static void prepend_env(spank_t sp, const char *var, const char *first, char sep, int entries) {
  char cur[VALUE_MAX];
  char val[VALUE_MAX];
  spank_err_t rc = spank_getenv(sp, var, cur, sizeof cur);
  if (rc == ESPANK_NOSPACE) {
    slurm_error("rdzvscope: %s is too long to extend; left as it is", var);
    return;
  }
  if (rc != ESPANK_SUCCESS || cur[0] == '\0') {
    if (copy_value(val, sizeof val, first) != 0) return;
  } else {
    /* entries: a colon/space list (LD_PRELOAD), else a comma list (bind paths) */
    if (entries ? has_entry(cur, first) : in_list(cur, first)) return;
    int n = snprintf(val, sizeof val, "%s%c%s", first, sep, cur);
    if (n < 0 || (size_t)n >= sizeof val) {
      slurm_error("rdzvscope: %s would be too long; left as it is", var);
      return;
    }
  }
  if (spank_setenv(sp, var, val, 1) != ESPANK_SUCCESS)
    slurm_error("rdzvscope: cannot set %s", var);
}

/* The trace directory of this task into `out`: the option's DIR, else the site default, else
 * rdzvscope-%j; made absolute against the task's working directory; a DIR without any
 * placeholder gets the layout appended. */
static int trace_dir(char *out, size_t cap) {
  const char *dir = opt_value[0] ? opt_value : conf_default[0] ? conf_default : "rdzvscope-%j";
  char cwd[PATH_MAX];
  char abs[PATH_MAX];
  int n;
  if (dir[0] != '/') {
    if (!getcwd(cwd, sizeof cwd)) return -1;
    n = snprintf(abs, sizeof abs, "%s/%s", cwd, dir);
  } else {
    n = snprintf(abs, sizeof abs, "%s", dir);
  }
  if (n < 0 || (size_t)n >= sizeof abs) return -1;
  /* no trailing slashes */
  for (size_t len = strlen(abs); len > 1 && abs[len - 1] == '/'; len--) abs[len - 1] = '\0';
  if (strchr(abs, '%') || conf_layout[0] == '\0')
    n = snprintf(out, cap, "%s", abs);
  else
    n = snprintf(out, cap, "%s/%s", abs, conf_layout);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* The part of `dir` before its first placeholder, cut back to a whole directory: what this
 * plugin creates (and binds into containers), where each traced process creates the rest.
 *
 * Where the plugin differs from the shim, on purpose: it does not expand the placeholders
 * (rdzv_trace_dir_expand) but hands RDZVSCOPE_DIR on as a pattern, and each traced process
 * expands it for itself when it starts: its own date (a job that runs past midnight UTC puts
 * its later processes' files under the next day), its own host for %h, its own job id.
 * Expanded here, in the task before exec, the date would be the task's start for every
 * process. So only the fixed part exists before the task runs, and that is also what
 * APPTAINER_BIND and SINGULARITY_BIND need (a bind path must exist). Any '%' starts the
 * placeholders: the test rdzv_config_read makes to expand at all, and the one `rdzvscope run`
 * makes for the directory it creates. */
static void fixed_prefix(const char *dir, char *out, size_t cap) {
  snprintf(out, cap, "%s", dir);
  char *pct = strchr(out, '%');
  if (!pct) return;
  *pct = '\0';
  char *slash = strrchr(out, '/');
  if (slash && slash != out)
    *slash = '\0';
  else if (slash)
    slash[1] = '\0';
}

static int enabled(void) {
  if (opt_given) return !opt_off;
  return conf_default[0] != '\0';
}

/* The job's program is on the site's exclude list (a step that must not be traced). */
static int excluded(spank_t sp) {
  if (!conf_exclude[0]) return 0;
  int argc = 0;
  char **argv = NULL;
  if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc <= 0 || !argv ||
      !argv[0])
    return 0;
  const char *base = strrchr(argv[0], '/');
  base = base ? base + 1 : argv[0];
  if (!in_list(conf_exclude, base)) return 0;
  slurm_verbose("rdzvscope: %s is excluded: not traced", base);
  return 1;
}

/* Containers: the same inside, the shim and the trace directory bound in. */
static void set_container_env(spank_t sp, const char *dir, const char *base) {
  static const char *const env_prefix[] = {"APPTAINERENV_", "SINGULARITYENV_"};
  static const char *const bind_var[] = {"APPTAINER_BIND", "SINGULARITY_BIND"};
  for (int i = 0; i < 2; i++) {
    char var[64];
    snprintf(var, sizeof var, "%sLD_PRELOAD", env_prefix[i]);
    prepend_env(sp, var, conf_shim, ':', 1);
    snprintf(var, sizeof var, "%sRDZVSCOPE_DIR", env_prefix[i]);
    if (spank_setenv(sp, var, dir, 1) != ESPANK_SUCCESS) slurm_error("rdzvscope: cannot set %s", var);
    prepend_env(sp, bind_var[i], base, ',', 0);
    prepend_env(sp, bind_var[i], conf_shim, ',', 0);
  }
}

int slurm_spank_task_init(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  if (!spank_remote(sp) || !enabled() || excluded(sp)) return 0;
  if (access(conf_shim, R_OK) != 0) {
    slurm_error("rdzvscope: shim %s not readable (%s): task not traced", conf_shim,
                strerror(errno));
    return 0;
  }
  /* A job's own RDZVSCOPE_DIR wins over the site default; an explicit --rdzvscope wins over
   * the job's. */
  char dir[PATH_MAX];
  char base[PATH_MAX];
  int own = !opt_given && spank_getenv(sp, "RDZVSCOPE_DIR", dir, sizeof dir) == ESPANK_SUCCESS &&
            dir[0] != '\0';
  if (!own && trace_dir(dir, sizeof dir) != 0) {
    slurm_error("rdzvscope: trace directory too long: task not traced");
    return 0;
  }
  fixed_prefix(dir, base, sizeof base);
  /* Made by the recorder core's rules (rdzv_trace_dir_ensure, as the shim and attach make
   * theirs): parents first, another task's mkdir at the same moment is success, each level
   * must be a directory (ENOTDIR otherwise), and what is made gets its mode whatever the
   * umask. The mode stays 0700 (group_read 0), as docs/slurm.md promises and as `rdzvscope
   * run` makes the fixed part: RDZVSCOPE_GROUP_READ is the traced processes' setting, applied
   * by the shim to the levels it makes below. */
  if (base[0] == '/' && rdzv_trace_dir_ensure(base, 0) != 0) {
    slurm_error("rdzvscope: cannot create %s (%s): task not traced", base, strerror(errno));
    return 0;
  }
  if (own) {
    slurm_verbose("rdzvscope: the job sets RDZVSCOPE_DIR=%s itself: kept", dir);
  } else if (spank_setenv(sp, "RDZVSCOPE_DIR", dir, 1) != ESPANK_SUCCESS) {
    slurm_error("rdzvscope: cannot set RDZVSCOPE_DIR: task not traced");
    return 0;
  }
  prepend_env(sp, "LD_PRELOAD", conf_shim, ':', 1);
  set_container_env(sp, dir, base);
  slurm_verbose("rdzvscope: tracing into %s (shim %s)", dir, conf_shim);
  return 0;
}
