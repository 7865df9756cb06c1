#!/usr/bin/env python3
"""`rdzvscope watch` on a real hanging PyTorch job, polled while it hangs.

Six gloo ranks started by hand under `rdzvscope run` (WORLD_SIZE=6): ranks 0-3 on time, rank 4
late (it sleeps before its rendezvous), rank 5 with a MASTER_ADDR that does not resolve (its
lookups fail until its timeout). While the job runs, `watch --once --format json --prom FILE`
is polled: at every poll the missing ranks, their states and reasons must be right, and both
Prometheus parsers must accept the metrics with the same counts. The moment the test is about
must be seen at least once: ranks 0-3 waiting, rank 4 started but not at the store, rank 5's
lookups failing with EAI_NONAME, the time left before the timeout known; and at that moment
watch names ranks 4 and 5 as the ones the waiting ranks wait for, and the ranks blocked on the
store are blocked in a store call (rdzvtest.watch: the JSON and the metrics agree at every poll). After the job died,
the last poll must agree with `rdzvscope analyze`: the same verdict and initiating rank, the
same ranks joined, the same ranks failed.

With --cluster the job is placed on three hosts of the test cluster (tests/cluster/cluster.sh):
ranks 0-2 on node0 (the store's host), 3-4 on node1, rank 5 on node2, whose /etc/hosts alone
lacks the rendezvous name `master`; the trace directory is shared, as on a shared file system.

    watch_hang.py --rdzvscope BIN --python PYTHON --work DIR [--cluster]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest import prom  # noqa: E402
from rdzvtest.watch import check_waiting, expect_waiting_on, watch_once  # noqa: E402
from rdzvtest.checks import expect, finish_scenario, run_script  # noqa: E402
from rdzvtest import cluster as test_cluster  # noqa: E402
from rdzvtest.e2e import BOGUS_HOST, Harness, Run  # noqa: E402
from rdzvtest.ports import free_port  # noqa: E402

WORLD = 6
TIMEOUT_S = 12   # init_process_group's timeout: how long ranks 0-3 wait
LATE_S = 8       # rank 4's sleep before its rendezvous
POLL_S = 0.5
BOUND_S = 60     # the whole job, on a loaded 2-core machine


def rank_set(text):
    """{0, 1, 2, 5} from "0-2, 5"."""
    out = set()
    for part in text.split(","):
        a, _, b = part.strip().partition("-")
        if a.isdigit():
            out.update(range(int(a), int(b or a) + 1))
    return out


def missing_in_headline(headline):
    """The ranks a headline names as missing: "k of N ranks joined; missing: 0-2 (why); 5 (why)"."""
    if "missing:" not in headline:
        return set()
    out = set()
    for group in headline.split("missing:", 1)[1].split(");"):
        out |= rank_set(group.split("(", 1)[0])
    return out


# The name rank 5 cannot resolve: a bogus one on one machine; on the cluster the job's own
# rendezvous name, missing from node2's /etc/hosts only.
UNRESOLVED = [BOGUS_HOST]


def check_poll(w, samples, errors):
    """What must hold at any moment of this job."""
    ranks = {r["rank"]: r for r in w["ranks"]}
    at = w["time"]
    expect(sorted(ranks) == list(range(WORLD)), f"{at}: ranks {sorted(ranks)}", errors)
    expect(w["expected_ranks"] == WORLD, f"{at}: expected_ranks {w['expected_ranks']}", errors)
    joined = [r for r, v in ranks.items() if v["joined"]]
    expect(w["joined_ranks"] == len(joined), f"{at}: joined_ranks {w['joined_ranks']} != {joined}", errors)
    r5 = ranks[5]
    expect(not r5["joined"], f"{at}: rank 5 (bogus MASTER_ADDR) joined", errors)
    expect(r5["state"] in ("not_started", "starting", "lookup_failing", "failed"),
           f"{at}: rank 5 in state {r5['state']}", errors)
    if r5["state"] == "lookup_failing":
        expect(UNRESOLVED[0] in r5["reason"] and "EAI_NONAME" in r5["reason"],
               f"{at}: rank 5's reason {r5['reason']!r}", errors)
        expect(f"5 ({r5['host']}: lookup of \"{UNRESOLVED[0]}\" fails with EAI_NONAME" in w["headline"],
               f"{at}: headline {w['headline']!r}", errors)
    missing = {r for r, v in ranks.items() if not v["joined"]}
    expect(missing_in_headline(w["headline"]) == missing,
           f"{at}: ranks {sorted(missing)} missing, the headline says {w['headline']!r}", errors)
    expect(prom.value(samples, "rdzvscope_ranks_joined") == w["joined_ranks"],
           f"{at}: metrics and JSON disagree on joined ranks", errors)
    expect(prom.value(samples, "rdzvscope_ranks_expected") == WORLD, f"{at}: rdzvscope_ranks_expected", errors)
    for state, n in w["states"].items():
        expect(prom.value(samples, "rdzvscope_ranks", state=state) == n, f"{at}: rdzvscope_ranks{{state={state}}}",
               errors)


def the_moment(w):
    """Ranks 0-3 waiting, rank 4 not at the store yet, rank 5's lookups failing. (The time left
    is not asked for: PyTorch 2.x waits in poll() with its timeout, and a call is recorded when
    it returns, so the timeout is known once the first wait ended; 1.13 sets SO_RCVTIMEO first.)"""
    ranks = {r["rank"]: r for r in w["ranks"]}
    return (all(ranks[r]["state"] == "waiting" for r in range(4))
            and ranks[4]["state"] in ("starting", "not_started")
            and ranks[5]["state"] == "lookup_failing")


def check_against_analyze(h, run, last, errors):
    d = h.analyze([run.trace_dir])
    v, wv = d["verdict"], last["verdict_so_far"]
    expect((wv["class"], wv["initiating_rank"]) == (v["class"], v["initiating_rank"]),
           f"watch's last verdict {wv['class']} rank {wv['initiating_rank']}, analyze's {v['class']} rank "
           f"{v['initiating_rank']}", errors)
    rows = {r["rank"]: r for r in d["ranks"] if r.get("rank") is not None and r.get("role") != "launcher agent"}
    ranks = {r["rank"]: r for r in last["ranks"]}
    for r, row in rows.items():
        expect(ranks[r]["joined"] == (row.get("connected") is not None or row.get("role") == "store server"),
               f"rank {r}: watch says joined={ranks[r]['joined']}, analyze's connected={row.get('connected')}",
               errors)
        failed = row.get("exit") not in (0, None) or row.get("exit") is None
        expect((ranks[r]["state"] == "failed") == failed,
               f"rank {r}: watch's state {ranks[r]['state']}, analyze's exit {row.get('exit')}", errors)
    expect(v["class"] == "name_resolution" and v["initiating_rank"] == 5,
           f"the job's verdict is {v['class']} rank {v['initiating_rank']}, expected name_resolution rank 5", errors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rdzvscope", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cluster", action="store_true", help="place the ranks on 3 hosts of the test cluster")
    args = ap.parse_args()
    if not args.cluster:
        return watch_hang(args, None)
    why = test_cluster.missing_requirements()
    if why:
        print(f"SKIP: {why}")
        return 77
    c = test_cluster.Cluster(3)
    try:
        c.up()
        c.sh("addname", "master", "node0", "node0", "node1")  # not on node2
        UNRESOLVED[0] = "master"
        return watch_hang(args, c)
    finally:
        left = c.down()
        if left:
            print(f"FAIL: the cluster left {left}")


def watch_hang(args, c):
    """The job, polled; c: the test cluster, or None for one machine."""
    os.makedirs(args.work, exist_ok=True)
    work = os.path.join(args.work, f"watch_hang-{os.getpid()}")
    os.makedirs(work)
    h = Harness(args.rdzvscope, args.python, work)
    run = Run("watch_hang", work, 1, {"timeout": TIMEOUT_S, "rank": 5})
    run.port = free_port()
    os.makedirs(run.trace_dir)
    prom_path = os.path.join(work, "rdzvscope.prom")
    for r in range(WORLD):
        env = {"E2E_DELAY_S": str(LATE_S)} if r == 4 else {}
        if c:
            host = "node0" if r < 3 else "node1" if r < 5 else "node2"
            env["GLOO_SOCKET_IFNAME"] = "eth0"
            h.launch(run, r, world=WORLD, env=env, master_addr="master", prefix=c.exec_prefix(host))
        else:
            h.launch(run, r, world=WORLD, env=env, master_addr=BOGUS_HOST if r == 5 else "127.0.0.1")
    errors, polls, moments, last = [], 0, 0, None
    try:
        while time.monotonic() - run.t0 < BOUND_S:
            done = all(p.poll() is not None for p in run.procs)
            last, samples = watch_once(args.rdzvscope, run.trace_dir, prom_path, WORLD)
            check_poll(last, samples, errors)
            check_waiting(last, samples, errors)
            polls += 1
            if the_moment(last):
                moments += 1
                # Ranks 0-3 on the store wait for the two that are not there (c10d: every
                # rank waits for WORLD_SIZE), and say which call they are blocked in.
                expect_waiting_on(last, "missing_ranks", [4, 5], [1, 2, 3], errors)
            print(f"+{time.monotonic() - run.t0:4.1f}s " + " ".join(
                f"{r['rank']}:{r['state']}" for r in last["ranks"]) + (" <- the moment" if the_moment(last) else ""))
            if done:
                break
            time.sleep(POLL_S)
    finally:
        h.wait_all(run, BOUND_S)
    print(f"watch_hang: {polls} polls, {moments} at the moment under test; last headline: {last['headline']}; "
          f"who waits on whom: {(last.get('waiting_on') or {}).get('headline')}")
    expect(moments > 0, "no poll saw ranks 0-3 waiting, rank 4 not yet at the store and rank 5's lookups "
                        "failing with the deadline known", errors)
    _, types = prom.check_file(prom_path)
    expect(types.get("rdzvscope_init_failures") == "counter", f"metric types {types}", errors)
    expect((last["deadline"] or {}).get("timeout_s") == TIMEOUT_S,
           f"the last poll's timeout {last['deadline']}, expected {TIMEOUT_S} s", errors)
    check_against_analyze(h, run, last, errors)
    if errors:
        print(run.summary())
    return finish_scenario("watch_hang" + (" (cluster)" if c else ""), errors[:20], work, run.t0, keep=False)


if __name__ == "__main__":
    run_script(main)
