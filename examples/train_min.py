#!/usr/bin/env python3
"""Minimal torch.distributed job: rendezvous, one all_reduce, clean shutdown.

Used by scripts/demo.sh and tests/torch. Launch one process per rank with the usual
variables set (torchrun sets them for you; without torchrun set them yourself):

    RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 \
        /usr/bin/python3 examples/train_min.py

Environment:
    RDZV_TIMEOUT_S   timeout of init_process_group and of the collective, seconds (default 30)
    RDZV_DELAY_S     sleep this long before joining the rendezvous (default 0; simulates a
                     slow rank, e.g. one still loading a checkpoint)
    RDZV_LATE_RANK   only this rank sleeps RDZV_DELAY_S (default: every rank that has it set;
                     torchrun gives every worker the same environment)
    RDZV_BACKEND     process group backend (default gloo)
"""
import datetime
import os
import sys
import time


def env_int(name, default):
    value = os.environ.get(name, "")
    try:
        return int(value) if value else default
    except ValueError:
        sys.exit(f"train_min: {name}={value!r} is not an integer")


def env_float(name, default):
    value = os.environ.get(name, "")
    try:
        return float(value) if value else default
    except ValueError:
        sys.exit(f"train_min: {name}={value!r} is not a number")


def main():
    missing = [v for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if v not in os.environ]
    if missing:
        sys.exit("train_min: set " + ", ".join(missing) + " (or launch with torchrun)")

    import torch
    import torch.distributed as dist

    rank = env_int("RANK", 0)
    world_size = env_int("WORLD_SIZE", 1)
    timeout_s = env_float("RDZV_TIMEOUT_S", 30.0)
    delay_s = env_float("RDZV_DELAY_S", 0.0)
    late_rank = env_int("RDZV_LATE_RANK", -1)
    if late_rank >= 0 and late_rank != rank:
        delay_s = 0.0
    backend = os.environ.get("RDZV_BACKEND", "gloo")
    tag = f"train_min[rank {rank}/{world_size} pid {os.getpid()}]"

    if delay_s > 0:
        print(f"{tag}: sleeping {delay_s:g}s before the rendezvous", flush=True)
        time.sleep(delay_s)

    t0 = time.monotonic()
    dist.init_process_group(backend, rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=timeout_s))
    t1 = time.monotonic()
    print(f"{tag}: joined {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']} "
          f"in {t1 - t0:.2f}s (backend {backend}, timeout {timeout_s:g}s)", flush=True)

    value = torch.full((4,), float(rank + 1))
    dist.all_reduce(value)
    expected = world_size * (world_size + 1) / 2
    ok = bool(torch.all(value == expected))
    print(f"{tag}: all_reduce -> {value[0].item():g} (expected {expected:g}): "
          f"{'ok' if ok else 'WRONG'}", flush=True)

    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
