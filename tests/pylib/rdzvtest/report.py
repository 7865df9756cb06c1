"""The Perfetto timeline that `rdzvscope analyze --timeline` writes, validated against the
diagnosis of the same analysis: used by tests/report/check_report.py on the stored scenarios
and by every end-to-end analysis (rdzvtest.e2e, tests/cluster)."""
import json

from rdzvtest.checks import Fail


def check_timeline_file(path, diag):
    """Checks the timeline file at path against diag (the JSON diagnosis of the same inputs);
    Fail at the first problem. Returns the timeline."""
    with open(path) as f:
        t = json.load(f)
    events = t.get("traceEvents")
    if not isinstance(events, list) or not events:
        raise Fail(f"{path}: no traceEvents list")
    for e in events:
        for k in ("name", "ph", "ts", "pid", "tid"):
            if k not in e:
                raise Fail(f"{path}: event without {k}: {e}")
        if not isinstance(e["ts"], (int, float)) or not isinstance(e["pid"], int) or not isinstance(e["tid"], int):
            raise Fail(f"{path}: ts/pid/tid of the wrong type: {e}")
        if e["ph"] == "X" and (not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0):
            raise Fail(f"{path}: X event without a valid dur: {e}")
        if e["ph"] not in ("X", "i", "M"):
            raise Fail(f"{path}: unexpected phase {e['ph']}")
        if e["ph"] != "M" and e["ts"] < -1e6:
            raise Fail(f"{path}: event long before the earliest launch: {e}")
    # X spans on one thread must nest (viewers drop spans that outlive their parent).
    by_thread = {}
    for e in events:
        if e["ph"] == "X":
            by_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], -e["dur"], e))
    for key, spans in by_thread.items():
        stack = []
        for ts, neg, e in sorted(spans, key=lambda s: (s[0], s[1])):
            end = ts - neg
            while stack and stack[-1] <= ts + 1e-3:
                stack.pop()
            if stack and end > stack[-1] + 1e-3:
                raise Fail(f"{path}: span {e['name']} at {ts} ends after its parent on thread {key}")
            stack.append(end)
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    procs = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    for r in diag["ranks"]:
        if r.get("absent"):   # a rank expected by WORLD_SIZE with no trace: a track of its own
            if not any(v.startswith(f"rank {r['rank']} (absent)") for v in threads.values()):
                raise Fail(f"{path}: absent rank {r['rank']} has no track (tracks: {threads})")
            continue
        # By pid: two processes may claim one rank on one host (a collision), each on its own track.
        # Processes in PID namespaces of their own share pids (each container's pid 1): their
        # tracks name the container or the namespace too.
        pid_words = f"(pid {r['pid']}" + (f", container {r['container']}" if r.get("container") else
                                          f" in PID namespace {r['pid_namespace']}" if r.get("pid_namespace") else "")
        track = [k for k, v in threads.items()
                 if pid_words in v and procs.get(k[0]) == "host " + r["host"]]
        if not track:
            raise Fail(f"{path}: rank {r['rank']} on {r['host']} has no thread track (tracks: {threads})")
        pid, tid = track[0]
        errors = [e for e in events if e["ph"] == "i" and e.get("cat") == "error" and (e["pid"], e["tid"]) == (pid, tid)]
        if r["first_error"] and r["first_error"]["time"] and not any(e["name"] == r["first_error"]["what"] for e in errors):
            raise Fail(f"{path}: rank {r['rank']}'s first error {r['first_error']['what']!r} is not an instant on its track")
        if r["first_store_connect"] and not any(e["ph"] == "X" and e.get("cat") == "connect" and (e["pid"], e["tid"]) == (pid, tid) for e in events):
            raise Fail(f"{path}: rank {r['rank']} connected to the store but its track has no connect span")
    meta = t.get("metadata", {}).get("rdzvscope", {})
    if meta.get("verdict", {}).get("class") != diag["verdict"]["class"]:
        raise Fail(f"{path}: metadata verdict {meta.get('verdict')} != {diag['verdict']['class']}")
    if not any(e["ph"] == "i" and e.get("cat") == "verdict" and diag["verdict"]["class"] in e["name"] for e in events):
        raise Fail(f"{path}: no verdict instant")
    if diag["discriminators"].get("timeout") and any(r["connected"] for r in diag["ranks"]):
        if not any(e["ph"] == "i" and e.get("cat") == "deadline" for e in events):
            raise Fail(f"{path}: a timeout is known and ranks connected, but no deadline marker")
    return t
