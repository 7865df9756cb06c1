#!/usr/bin/env python3
"""Write a large, realistic merged training log: mostly ordinary lines of a torchrun job
(per-rank prefixes, python logging, NCCL INFO, tqdm redraws, warnings), with a few c10d
lines sprinkled in. Used by compare.py; also handy by hand:

    gen_log.py OUT --size-mb 1024 [--seed 1]

The file is built from a handful of distinct random blocks written round-robin, each with a
few c10d lines at random places, so that a 1 GiB file takes seconds to write.
"""
import argparse
import random
import sys

ORDINARY = [
    "[rank{r}]:[{ts}] INFO train.py:{ln} step {step}/200000 loss={loss:.4f} lr={lr:.2e} grad_norm={gn:.3f} tokens/s={tps}",
    "[default{r}]:{ts} - INFO - trainer - epoch {ep} iter {step}: loss {loss:.4f}, data 0.0{ln}s, fwd+bwd 0.{tps}s",
    "[rank{r}]:node{node}:{pid}:{pid} [{r}] NCCL INFO Channel {ch:02d}/32 : 0 1 2 3 4 5 6 7",
    "[rank{r}]:node{node}:{pid}:{pid} [{r}] NCCL INFO comm 0x55d3c{pid} rank {r} nranks 64 cudaDev {r} busId 1{ch}000 - Init COMPLETE",
    "[rank{r}]:{ts} INFO checkpoint.py:{ln} saved shard {step} of model_state to /ckpt/run42/step_{step}/shard_{r}.pt ({tps} bytes)",
    "[rank{r}]: {pct}%|{bar}| {step}/200000 [01:{ep:02d}:{ch:02d}<12:34:56, {gn:.2f}it/s]",
    "[default{r}]:wandb: logging step {step}: train/loss={loss:.5f} train/lr={lr:.3e} perf/mfu=0.{tps}",
    "[rank{r}]:[{ts}] WARNING dataloader.py:{ln} slow batch {step}: waited {gn:.3f}s for worker {ch}",
    "[rank{r}]:{ts} INFO memory: allocated {tps} MiB, reserved {pid} MiB, peak {tps} MiB on cuda:{r}",
    "[rank{r}]:/usr/lib/python3/dist-packages/torch/utils/checkpoint.py:{ln}: UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly.",
    "[rank{r}]:[{ts}] DEBUG scheduler.py:{ln} cosine schedule at {step}: warmup done, factor {gn:.6f}",
    "{ts} INFO launcher: heartbeat from node{node} ok, {pid} samples queued, gpu util {pct}%",
]

C10D = [
    "[rank{r}]:[W1129 {hms}.123456 {pid} socket.cpp:464] [c10d] waitForInput: poll for socket SocketImpl(fd=76, addr=[node{node}]:40950, remote=[node0]:29500) returned 0, likely a timeout",
    "[rank{r}]:[W1129 {hms}.123456 {pid} socket.cpp:489] [c10d] waitForInput: socket SocketImpl(fd=76, addr=[node{node}]:40950, remote=[node0]:29500) timed out after 1800000ms",
    "[rank{r}]:[W1129 {hms}.123456 {pid} TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=81, addr=[node{node}]:50612, remote=[node0]:29500): Broken pipe",
    "[W socket.cpp:558] [c10d] The client socket has failed to connect to [::ffff:10.0.0.5]:29500 (errno: 110 - Connection timed out).",
    "[rank{r}]:[W1129 {hms}.123456 {pid} socket.cpp:767] [c10d] The IPv6 network addresses of (node0, 29500) cannot be retrieved (gai error: -2 - Name or service not known).",
]


def ts(rng):
    return "2026-11-29 {:02d}:{:02d}:{:02d},{:03d}".format(
        rng.randrange(24), rng.randrange(60), rng.randrange(60), rng.randrange(1000))


# Relative frequencies: the torch UserWarning (a line that the "orch" anchor picks and the
# parser then rejects) is rare, as in real logs.
WEIGHTS = [30, 20, 6, 2, 2, 10, 8, 3, 5, 0.05, 3, 2]


def ordinary_line(rng):
    t = rng.choices(ORDINARY, weights=WEIGHTS)[0]
    pct = rng.randrange(101)
    return t.format(r=rng.randrange(64), ts=ts(rng), ln=rng.randrange(10, 999),
                    step=rng.randrange(200000), loss=rng.uniform(0.5, 9), lr=rng.uniform(1e-6, 1e-3),
                    gn=rng.uniform(0, 20), tps=rng.randrange(10000, 999999), ep=rng.randrange(60),
                    node=rng.randrange(8), pid=rng.randrange(1000, 99999), ch=rng.randrange(32),
                    pct=pct, bar="#" * (pct // 10) + " " * (10 - pct // 10))


def c10d_line(rng):
    hms = "{:02d}:{:02d}:{:02d}".format(rng.randrange(24), rng.randrange(60), rng.randrange(60))
    return rng.choice(C10D).format(r=rng.randrange(64), hms=hms, pid=rng.randrange(1000, 99999),
                                   node=rng.randrange(8))


def make_block(rng, size, c10d_per_block):
    lines, n = [], 0
    while n < size:
        line = ordinary_line(rng)
        lines.append(line)
        n += len(line) + 1
    for _ in range(c10d_per_block):
        lines.insert(rng.randrange(len(lines)), c10d_line(rng))
    return ("\n".join(lines) + "\n").encode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--size-mb", type=float, default=1024)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--blocks", type=int, default=8, help="distinct random blocks")
    ap.add_argument("--block-mb", type=float, default=4)
    ap.add_argument("--c10d-per-block", type=int, default=3)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    target = int(a.size_mb * 1024 * 1024)
    blocks = [make_block(rng, int(a.block_mb * 1024 * 1024), a.c10d_per_block) for _ in range(a.blocks)]
    written = 0
    with open(a.out, "wb") as f:
        i = 0
        while written < target:
            b = blocks[i % len(blocks)]
            if written + len(b) > target:   # end on a line boundary near the target size
                cut = b.rfind(b"\n", 0, target - written)
                b = b[:cut + 1] if cut >= 0 else b""
                if not b:
                    break
            f.write(b)
            written += len(b)
            i += 1
    print(f"{a.out}: {written} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
