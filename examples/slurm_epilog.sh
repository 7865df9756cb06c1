#!/bin/bash
# EpilogSlurmctld for rdzvscope: when a traced job failed, write the diagnosis beside its
# traces, so that whoever looks at the failed job finds the failure class, the node and rank
# it started on, and the next command to run, without running anything:
#
#   slurm.conf:   EpilogSlurmctld=/usr/local/share/rdzvscope/examples/slurm_epilog.sh
#
# slurmctld runs it on its own host after every job, with the job's facts in the environment
# (SLURM_JOB_ID, SLURM_JOB_EXIT_CODE2 "EXIT:SIGNAL", SLURM_JOB_DERIVED_EC) and nothing of the
# job's own environment. It looks for the job's trace directory under each root of
# RDZVSCOPE_TRACE_ROOTS, in the layouts that rdzvscope's Slurm pieces use:
#
#   ROOT/rdzv-JOBID             examples/slurm_job.sbatch (ROOT: its SHARED)
#   ROOT/YYYY/MM/DD/JOBID       the SPANK plugin (ROOT: --rdzvscope=DIR or its default=DIR)
#   ROOT/rdzvscope-JOBID        `rdzvscope run` without --out, run in ROOT
#
# and runs `rdzvscope analyze --fail-on-problem --format markdown DIR > DIR/summary.md`. A
# summary.md already there (the job script's own last step wrote it) is kept. A job that
# succeeded, or left no traces, costs one stat per layout. Always exits 0: problems go to
# stderr, which slurmctld logs.
#
# Settings, from the environment or from /etc/default/rdzvscope-epilog (sourced when present;
# slurmctld gives an epilog no environment of its own, so the file is the usual place):
#   RDZVSCOPE_TRACE_ROOTS   space-separated roots (default /shared/rdzv)
#   RDZVSCOPE_BIN           the CLI (default: rdzvscope on the PATH, else /usr/local/bin/rdzvscope)
#   RDZVSCOPE_SUMMARY_ALL   1: also summarize jobs that succeeded (default 0)
#   RDZVSCOPE_ANALYZE_TIMEOUT  seconds for analyze (default 60)
CONF=${RDZVSCOPE_EPILOG_CONF:-/etc/default/rdzvscope-epilog}
# shellcheck source=/dev/null
[[ -r $CONF ]] && . "$CONF"
ROOTS=${RDZVSCOPE_TRACE_ROOTS:-/shared/rdzv}
BIN=${RDZVSCOPE_BIN:-$(command -v rdzvscope || echo /usr/local/bin/rdzvscope)}
JOB=${SLURM_JOB_ID:-}
[[ $JOB =~ ^[0-9]+(_[0-9]+)?$ ]] || exit 0

failed=0
ec2=${SLURM_JOB_EXIT_CODE2:-}
[[ -n $ec2 && $ec2 != 0:0 ]] && failed=1
[[ -n ${SLURM_JOB_DERIVED_EC:-} && ${SLURM_JOB_DERIVED_EC} != 0 && ${SLURM_JOB_DERIVED_EC} != 0:0 ]] && failed=1
[[ -z $ec2 && ${SLURM_JOB_EXIT_CODE:-0} != 0 ]] && failed=1
((failed)) || [[ ${RDZVSCOPE_SUMMARY_ALL:-0} == 1 ]] || exit 0

shopt -s nullglob
for root in $ROOTS; do
  for dir in "$root/rdzv-$JOB" "$root"/[0-9][0-9][0-9][0-9]/[0-9][0-9]/[0-9][0-9]/"$JOB" \
             "$root/rdzvscope-$JOB"; do
    [[ -d $dir ]] || continue
    if [[ -e $dir/summary.md ]]; then
      echo "rdzvscope epilog: job $JOB: $dir/summary.md already there" >&2
      continue
    fi
    # analyze exits 3 on a problem (--fail-on-problem): that is the point here, not an error
    env -u LD_PRELOAD -u RDZVSCOPE_DIR timeout "${RDZVSCOPE_ANALYZE_TIMEOUT:-60}" \
      "$BIN" analyze --fail-on-problem --format markdown "$dir" > "$dir/summary.md.tmp"
    rc=$?
    if [[ $rc == 0 || $rc == 3 ]] && [[ -s $dir/summary.md.tmp ]]; then
      mv -f "$dir/summary.md.tmp" "$dir/summary.md"
      echo "rdzvscope epilog: job $JOB (exit ${ec2:-${SLURM_JOB_EXIT_CODE:-?}}): $dir/summary.md" >&2
    else
      rm -f "$dir/summary.md.tmp"
      echo "rdzvscope epilog: job $JOB: analyze $dir exited $rc" >&2
    fi
  done
done
exit 0
