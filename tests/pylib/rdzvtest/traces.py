"""Queries on parsed `rdzvscope dump` output (cli.dump: one {"header", "events", "summary"}
per trace file)."""


def rank_of(f):
    """The rank in a file's identity; None when it has none."""
    r = (f["header"].get("identity") or {}).get("rank")
    return r if isinstance(r, int) and r >= 0 else None


def files_of_rank(files, rank):
    return [f for f in files if rank_of(f) == rank]


def events(files, kind=None, rank=None):
    """(file, event) for every event, of one kind and one rank when given."""
    for f in files:
        if rank is not None and rank_of(f) != rank:
            continue
        for ev in f["events"]:
            if kind is None or ev.get("kind") == kind:
                yield f, ev


def port_of(addr):
    """'127.0.0.1:29500', '[::1]:29500', '[::ffff:127.0.0.1]:29500' -> 29500; None -> None."""
    if not addr or not isinstance(addr, str) or ":" not in addr:
        return None
    try:
        return int(addr.rsplit(":", 1)[1])
    except ValueError:
        return None


def wall_ns(f, ev):
    """An event's CLOCK_REALTIME time, from the header's realtime/monotonic pair."""
    h = f["header"]
    return ev["ts_ns"] - h["clock_monotonic_ns"] + h["clock_realtime_ns"]


def failed_resolves(files, host):
    """(file, event) of every failed lookup of `host`."""
    return [(f, ev) for f, ev in events(files, "resolve")
            if ev.get("host") == host and ev.get("ret") not in (0, None)]
