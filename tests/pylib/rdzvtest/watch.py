"""`rdzvscope watch --once --format json --prom FILE` on a running job, and the checks that its
JSON (schema rdzvscope.watch/1) and its metrics say the same about who is blocked and whom
they wait for. The metrics are read by the real parsers (rdzvtest.prom)."""
import json
import subprocess

from rdzvtest import prom
from rdzvtest.checks import Fail, expect


def watch_once(rdzvscope, trace_dir, prom_path, world=None, read_metrics=True):
    """One report of watch on trace_dir: (its JSON, the metrics' samples as prom.parse gives).
    read_metrics=False, for an interpreter without prometheus_client (the e2e harness runs
    under the system Python): promtool alone checks the file, and the samples are None."""
    cmd = [rdzvscope, "watch", trace_dir, "--once", "--format", "json", "--prom", prom_path]
    if world is not None:
        cmd += ["--world-size", str(world)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    if p.returncode != 0:
        raise Fail(f"watch exited {p.returncode}: {p.stderr.strip()[:500]}")
    if not read_metrics:
        prom.promtool_check(prom_path)
        return json.loads(p.stdout), None
    samples, _ = prom.check_file(prom_path)
    return json.loads(p.stdout), samples


def series(samples, name):
    """{labels dict as a frozenset: value} of every sample of `name`."""
    return {ls: v for (n, ls), v in samples.items() if n == name}


def check_waiting(w, samples, errors):
    """The blocked calls and the wait-for state agree between the JSON and the metrics, and with
    the ranks' own rows: a waiting rank is joined and blocked in a store call, an awaited rank of
    `missing_ranks` has not joined. samples None: the JSON alone."""
    at = w["time"]
    ranks = {r["rank"]: r for r in w["ranks"]}
    blocked = {r: v["blocked"] for r, v in ranks.items() if v.get("blocked")}
    for r, b in blocked.items():
        expect(b["seconds"] >= 0 and b["words"], f"{at}: rank {r}'s blocked call {b}", errors)
    wo = w.get("waiting_on")
    if samples is not None:
        check_metrics(w, samples, blocked, errors)
    if not wo:
        return
    for r in wo["waiting_ranks"]:
        expect(ranks[r]["joined"] and (ranks[r].get("blocked") or {}).get("call") == "store_reply",
               f"{at}: waiting rank {r} is {ranks[r]}", errors)
    if wo["on"] == "missing_ranks":
        for r in wo["awaited_ranks"]:
            expect(not ranks[r]["joined"], f"{at}: awaited rank {r} has joined", errors)


def check_metrics(w, samples, blocked, errors):
    """The metrics say what the JSON says: the blocked ranks, their calls and seconds (one
    refresh: the same values), the awaited ranks and how many wait for them."""
    at = w["time"]
    metric = {int(dict(ls)["rank"]): (dict(ls)["call"], v)
              for ls, v in series(samples, "rdzvscope_rank_blocked_seconds").items()}
    expect(set(metric) == set(blocked), f"{at}: blocked ranks in the metrics {sorted(metric)}, in the JSON "
                                        f"{sorted(blocked)}", errors)
    for r, b in blocked.items():
        if r in metric:
            expect(metric[r][0] == b["call"] and abs(metric[r][1] - b["seconds"]) < 1e-6,
                   f"{at}: rank {r} blocked in {b} by the JSON, {metric[r]} by the metrics", errors)
    wo = w.get("waiting_on")
    awaited = {int(dict(ls)["rank"]): dict(ls)["awaited_as"]
               for ls, v in series(samples, "rdzvscope_awaited_rank_info").items() if v == 1}
    if not wo:
        expect(not awaited, f"{at}: metrics name awaited ranks {awaited}, the JSON none", errors)
        return
    kind = {"missing_ranks": "missing_rank", "store_host": "store_host"}[wo["on"]]
    expect(awaited == {r: kind for r in wo["awaited_ranks"]},
           f"{at}: awaited ranks in the metrics {awaited}, in the JSON {wo['awaited_ranks']} ({wo['on']})", errors)
    expect(prom.value(samples, "rdzvscope_waiting_ranks") == len(wo["waiting_ranks"]),
           f"{at}: rdzvscope_waiting_ranks", errors)


def expect_waiting_on(w, on, awaited, waiting_at_least, errors):
    """The moment a test is about: the ranks `waiting_at_least` (and maybe more) wait for
    exactly `awaited`, as `on` ("missing_ranks" or "store_host"), and the headline says so."""
    wo = w.get("waiting_on") or {}
    expect(wo.get("on") == on and wo.get("awaited_ranks") == sorted(awaited)
           and set(waiting_at_least) <= set(wo.get("waiting_ranks", [])),
           f"{w['time']}: watch says {wo or 'nobody waits'}; expected ranks {sorted(waiting_at_least)} waiting "
           f"for {sorted(awaited)} ({on})", errors)
    if wo:
        expect(" wait for " in wo["headline"], f"headline {wo['headline']!r}", errors)
