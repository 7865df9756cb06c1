#!/bin/bash
# A torchrun launch (c10d rendezvous) under rdzvscope: run this on every node of the job.
#
#   RDZV_HOST=node001 NNODES=2 bash examples/torchrun.sh train.py [ARGS...]
#
# Inside a Slurm allocation the defaults come from SLURM_* (see slurm_job.sbatch for the
# batch script around it). Every process (the torchrun agent and each worker) writes one trace
# file into $TRACE_DIR; read them with `rdzvscope dump $TRACE_DIR`.
#
# Tested (tests/examples) with PyTorch 2.13 from PyPI: one node, 4 workers, a straggler.
# Debian 12's own python3-torch 1.13 ships a torchrun that crashes at start under Python
# 3.11; with it, start one process per rank with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set.
set -euo pipefail

JOB_ID=${SLURM_JOB_ID:-$(date +%s)}
NNODES=${NNODES:-${SLURM_NNODES:-1}}
NPROC_PER_NODE=${NPROC_PER_NODE:-8}
RDZV_HOST=${RDZV_HOST:-$(hostname)}
RDZV_PORT=${RDZV_PORT:-29400}
TRACE_DIR=${TRACE_DIR:-${SHARED:-$PWD}/rdzv-$JOB_ID}
RDZVSCOPE=${RDZVSCOPE:-rdzvscope}

mkdir -p "$TRACE_DIR"
exec "$RDZVSCOPE" run --out "$TRACE_DIR" --ports "$RDZV_PORT" -- \
  torchrun \
    --nnodes="$NNODES" \
    --nproc-per-node="$NPROC_PER_NODE" \
    --rdzv-backend=c10d \
    --rdzv-endpoint="$RDZV_HOST:$RDZV_PORT" \
    --rdzv-id="$JOB_ID" \
    "$@"
