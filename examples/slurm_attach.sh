#!/bin/bash
# Attach rdzvscope's eBPF probes on every node of a Slurm job that is already running (hung
# in its rendezvous, started without the shim), then diagnose. Run as root on a login node:
#
#   SHARED=/shared/rdzv bash examples/slurm_attach.sh JOBID [PORT] [SECONDS]
#
# One `rdzvscope attach` per node of the job, as an extra step beside the job's own
# (--overlap: the job's steps hold every CPU), recording for SECONDS (default 60) every
# process of the node that uses PORT (default 29500: MASTER_PORT, or torchrun's
# --rdzv-endpoint port) into $SHARED/attach-JOBID/<node>/; then `rdzvscope analyze` on them.
# Every process of the node that uses PORT is recorded, another job's on a shared node too.
# Attach finds the store connections made before it started; what it can say about a hang
# comes from what happens while it records: give it a SECONDS that outlasts the job's
# rendezvous timeout when the job is still waiting.
#
# Tested by tests/slurm (slurm.attach_hung) on the Slurm test cluster. Environment:
#   SHARED     where the traces go, readable on the node you analyze from (required)
#   RDZVSCOPE  the CLI on the nodes (default: rdzvscope on the PATH)
#   ATTACH_OPTS more options for attach; --same-netns where the "nodes" are network namespaces
#              of one kernel (the test cluster), whose attach would otherwise each record every
#              node's processes
set -euo pipefail

JOB=${1:?usage: slurm_attach.sh JOBID [PORT] [SECONDS]}
PORT=${2:-29500}
SECONDS_=${3:-60}
: "${SHARED:?set SHARED to a directory every node can write}"
RDZVSCOPE=${RDZVSCOPE:-rdzvscope}
OUT=$SHARED/attach-$JOB

NODES=$(squeue -h -j "$JOB" -o %D)
[[ $NODES =~ ^[0-9]+$ ]] || { echo "slurm_attach: job $JOB is not running (squeue: '$NODES')" >&2; exit 2; }
mkdir -p "$OUT"
# %h: each node writes into its own directory (attach expands it as its own host name).
srun --overlap --jobid "$JOB" -N"$NODES" --ntasks-per-node=1 \
  "$RDZVSCOPE" attach --all --port "$PORT" --duration "$SECONDS_" --out "$OUT/%h" ${ATTACH_OPTS:-}
"$RDZVSCOPE" analyze "$OUT"
