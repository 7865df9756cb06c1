#!/usr/bin/env python3
"""One rank of an end-to-end scenario (run by tests/e2e/harness.py under /usr/bin/python3,
the interpreter that has Debian's python3-torch).

Static rendezvous over TCPStore: RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR / MASTER_PORT,
`init_process_group("gloo", timeout=E2E_TIMEOUT_S)`. Every line it prints starts with
"[rankN]" so that a merged log still says who printed it.

Environment (all optional but RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT):
    E2E_TIMEOUT_S   init_process_group timeout in seconds (default 3)
    E2E_DELAY_S     sleep this long after `import torch`, before the rendezvous (default 0);
                    "9,1.5": 9 s in torchrun's first attempt, 1.5 s in the next ones
                    (TORCHELASTIC_RESTART_COUNT picks the value, the last one repeats)
    E2E_VIA_PORT    connect to the store through this port (a proxy of the harness) instead
                    of MASTER_PORT, after writing MASTER_PORT to E2E_PORT_FILE: under torchrun
                    the workers' store port is only known once the agent picked it
    E2E_MODE        "train": one all_reduce, then destroy (default)
                    "store_loop": after init, set/get on the default store (and a barrier
                                  every 10 rounds with E2E_LOOP_BARRIER=1) for E2E_LOOP_S seconds
    E2E_LOOP_S      length of the store loop (default 8)
    E2E_LOOP_UNTIL  a path: the store loop ends once it exists (E2E_LOOP_S is then its cap)
    E2E_RANK_ENV    JSON {"RANK": {"VAR": "value"}}: variables set for that rank only, before
                    anything else (torchrun starts every worker with the same environment)
    E2E_FR_DUMP     "1": write PyTorch's Flight Recorder buffer (TORCH_FR_BUFFER_SIZE must be set)
                    to ${TORCH_FR_DUMP_TEMP_FILE}<rank> once the all_reduce completed or failed,
                    the file NCCL's watchdog writes on a timeout (the CPU build's gloo writes none
                    on its own: this stands in for it)
    E2E_FR_STACKS   "1": the dump with its stack frames (_dump_fr_trace's default); without, as
                    here by default, it takes milliseconds instead of seconds (c10d-notes.md)
    E2E_FR_DUMP_AFTER_S  also from a thread, this long after init_process_group, if the rank has
                    not dumped by then: NCCL dumps every rank when the first one times out,
                    a stalled one too, while its main thread is still busy elsewhere
    E2E_FAULT       ACTION@POINT: this rank brings a fault on itself (tests/matrix), at POINT
                    before_init (after the delay, before init_process_group), after_init (after
                    init_process_group, before the first collective) or store_loop (in the
                    store loop, E2E_FAULT_AFTER_S after its first round, default 0.5); ACTION
                    raise (an exception: exit 1 with its traceback), exit0 (the process ends
                    with status 0), sigkill, sigstop (it stops itself: frozen until killed),
                    stall (sleeps E2E_STALL_S, default 600, then goes on), oom (joins the memory
                    cgroup E2E_OOM_CGROUP and allocates until the kernel's OOM killer kills it)

It prints (the harness waits for these lines):
    "[rankN] e2e: torch imported"           before the delay
    "[rankN] e2e: joined"                   after init_process_group
    "[rankN] e2e: store loop running"       store_loop mode, after the first set/get
    "[rankN] e2e: done"                     on a clean finish (exit 0)
    "[rankN] e2e: FAILED <Type>: <msg>"     then the traceback, exit 1
    "[rankN] e2e: fault ACTION at POINT"    E2E_FAULT, just before it acts
"""
import datetime
import json
import os
import signal
import sys
import time
import traceback

RANK = os.environ.get("RANK", "?")
TAG = f"[rank{RANK}]"


def say(msg):
    print(f"{TAG} e2e: {msg}", flush=True)


def apply_rank_env():
    per_rank = json.loads(os.environ.get("E2E_RANK_ENV") or "{}")
    os.environ.update(per_rank.get(os.environ.get("RANK", ""), {}))


def delay_s():
    """E2E_DELAY_S, the value of this torchrun attempt where it lists one per attempt."""
    values = (os.environ.get("E2E_DELAY_S") or "0").split(",")
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT") or 0)
    return float(values[min(attempt, len(values) - 1)])


def fault_at(point):
    """E2E_FAULT: act when this rank is at `point` and the fault names it."""
    action, _, where = (os.environ.get("E2E_FAULT") or "").partition("@")
    if where != point:
        return
    say(f"fault {action} at {point}")
    sys.stdout.flush()
    sys.stderr.flush()
    if action == "raise":
        raise RuntimeError(f"e2e fault: an exception at {point}")
    if action == "exit0":
        os._exit(0)   # no atexit/teardown: the process is simply gone, status 0
    if action in ("sigkill", "sigstop"):
        os.kill(os.getpid(), signal.SIGKILL if action == "sigkill" else signal.SIGSTOP)
        return    # SIGSTOP: frozen until killed (or continued)
    if action == "oom":
        # The kernel's OOM killer: join the memory cgroup E2E_OOM_CGROUP (its limit set by the
        # caller; what this process already holds stays charged where it was), then allocate
        # and touch memory until the kernel kills it (SIGKILL, no exit record).
        with open(os.path.join(os.environ["E2E_OOM_CGROUP"], "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        hog = []
        while True:
            hog.append(bytearray(b"x" * (16 << 20)))
    if action == "stall":
        time.sleep(float(os.environ.get("E2E_STALL_S") or 600))
        return
    raise ValueError(f"E2E_FAULT: unknown action {action!r}")


_fr_dumped = []


def dump_flight_recorder(rank):
    """E2E_FR_DUMP: the Flight Recorder's pickle to ${TORCH_FR_DUMP_TEMP_FILE}<rank>, once."""
    if os.environ.get("E2E_FR_DUMP") != "1" or _fr_dumped:
        return
    _fr_dumped.append(rank)
    from torch._C import _distributed_c10d as c10d
    path = os.environ.get("TORCH_FR_DUMP_TEMP_FILE", "/tmp/nccl_trace_rank_") + str(rank)
    t = time.monotonic()
    data = c10d._dump_fr_trace(includeStackTraces=os.environ.get("E2E_FR_STACKS") == "1")
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.rename(path + ".tmp", path)
    say(f"flight recorder dumped to {path} in {time.monotonic() - t:.2f}s")


def dump_flight_recorder_later(rank):
    """E2E_FR_DUMP_AFTER_S: dump from a thread while the main thread may still be busy."""
    after = os.environ.get("E2E_FR_DUMP_AFTER_S")
    if os.environ.get("E2E_FR_DUMP") != "1" or not after:
        return
    import threading
    t = threading.Timer(float(after), dump_flight_recorder, args=(rank,))
    t.daemon = True
    t.start()


def store_via_proxy():
    """E2E_VIA_PORT: hand the real store port to the harness's proxy, then use the proxy."""
    via = os.environ.get("E2E_VIA_PORT")
    if not via:
        return
    with open(os.environ["E2E_PORT_FILE"], "w") as f:
        f.write(os.environ["MASTER_PORT"])
    say(f"store {os.environ['MASTER_PORT']} reached through port {via}")
    os.environ["MASTER_PORT"] = via


def main():
    apply_rank_env()
    store_via_proxy()
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    timeout_s = float(os.environ.get("E2E_TIMEOUT_S") or 3)
    delay = delay_s()
    mode = os.environ.get("E2E_MODE") or "train"
    loop_s = float(os.environ.get("E2E_LOOP_S") or 8)
    say(f"start pid {os.getpid()} mode {mode} master {os.environ['MASTER_ADDR']}:"
        f"{os.environ['MASTER_PORT']} world {world_size} timeout {timeout_s:g}s")

    import torch
    import torch.distributed as dist
    say(f"torch imported (torch {torch.__version__})")

    if delay > 0:
        say(f"sleeping {delay:g}s before the rendezvous")
        time.sleep(delay)
    fault_at("before_init")

    t0 = time.monotonic()
    dist.init_process_group("gloo", rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=timeout_s))
    say(f"joined in {time.monotonic() - t0:.2f}s")
    dump_flight_recorder_later(rank)
    fault_at("after_init")

    if mode == "store_loop":
        store = dist.distributed_c10d._get_default_store()
        end = time.monotonic() + loop_s
        until = os.environ.get("E2E_LOOP_UNTIL")
        n = 0
        fault_after = float(os.environ.get("E2E_FAULT_AFTER_S") or 0.5)
        started = time.monotonic()
        while time.monotonic() < end and not (until and os.path.exists(until)):
            if n > 0 and time.monotonic() - started >= fault_after:
                fault_at("store_loop")
            store.set(f"e2e/{rank}", str(n))
            store.get(f"e2e/{rank}")
            if n == 0:
                say("store loop running")
            n += 1
            # A gloo barrier would let gloo, not the store, notice a dead peer first (the
            # store_killed scenario must fail on the store): only where asked for.
            if n % 10 == 0 and os.environ.get("E2E_LOOP_BARRIER") == "1":
                dist.barrier()
            time.sleep(0.01)
        say(f"store loop finished after {n} rounds")
    else:
        value = torch.full((4,), float(rank + 1))
        try:
            dist.all_reduce(value)
        finally:
            dump_flight_recorder(rank)
        expected = world_size * (world_size + 1) / 2
        if value[0].item() != expected:
            raise RuntimeError(f"all_reduce gave {value[0].item()}, expected {expected}")
        say(f"all_reduce ok ({expected:g})")

    dist.destroy_process_group()
    say("done")
    return 0


if __name__ == "__main__":
    try:
        rc = main()
    except BaseException as e:  # noqa: BLE001 - report every failure the same way
        say(f"FAILED {type(e).__name__}: {e}")
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        # os._exit: do not let torch's atexit/thread teardown hang a failed rank.
        os._exit(1)
    sys.stdout.flush()
    sys.exit(rc)
