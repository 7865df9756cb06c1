"""The labelled log corpus of tests/corpus (issue 13): reading its manifest, running
`rdzvscope analyze --log` on each entry, and scoring the verdicts against the labels.

manifest.tsv, one entry a line (tab-separated, '#' starts a comment):
    file  class  initiating_rank  pytorch  source  why
`file` is relative to tests/corpus/logs (a directory stands for all its files: one job's rank
logs); `class` is what the text can tell (`unknown` when it cannot); `initiating_rank` and
`pytorch` are `-` when the thread does not establish them.
holdout/manifest.tsv (issue 29, the logs no rule was written against) has one more field,
`label_source` before `why`: who confirmed the cause in the thread, and where. Its `class` is
the thread's confirmed cause, labelled before any analyzer ran on the log.

Scoring (issue 13, item 2):
- right: the verdict's class is the label's; for a label `unknown` (the text cannot tell),
  an `unknown` verdict or a failure class at low confidence (a guess that says it is one) is
  right, `healthy` never is;
- abstained: the label names a class and the verdict is `unknown`;
- wrong: anything else. A wrong verdict at high confidence is counted apart.
The initiating rank is checked where the label has one and the class is right: a different
rank is wrong, no rank is counted as a rank abstention.
"""
import json
import os
from collections import OrderedDict

from rdzvtest.cli import run_cli

FIELDS = ("file", "cls", "rank", "pytorch", "source", "why")
HOLDOUT_FIELDS = ("file", "cls", "rank", "pytorch", "source", "label_source", "why")


class Entry:
    def __init__(self, file, cls, rank, pytorch, source, why, line, label_source=""):
        self.file, self.cls, self.pytorch, self.source, self.why = file, cls, pytorch, source, why
        self.rank = None if rank in ("-", "") else int(rank)
        self.line = line
        self.label_source = label_source

    def paths(self, logs_dir):
        p = os.path.join(logs_dir, self.file)
        if os.path.isdir(p):
            return sorted(os.path.join(p, f) for f in os.listdir(p)
                          if os.path.isfile(os.path.join(p, f)))
        return [p]


def read_manifest(path):
    """The entries of manifest.tsv; ValueError on a malformed line."""
    entries = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) == len(HOLDOUT_FIELDS):
                f = dict(zip(HOLDOUT_FIELDS, parts))
                entries.append(Entry(f["file"], f["cls"], f["rank"], f["pytorch"], f["source"], f["why"],
                                     line=n, label_source=f["label_source"]))
            elif len(parts) == len(FIELDS):
                entries.append(Entry(*parts, line=n))
            else:
                raise ValueError(f"{path}:{n}: {len(parts)} fields, want {len(FIELDS)} "
                                 f"(or {len(HOLDOUT_FIELDS)} with label_source)")
    return entries


def read_known_misses(path):
    """file -> reason, from known_misses.tsv (file TAB reason); {} when absent."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.strip() and not line.startswith("#"):
                file, _, reason = line.partition("\t")
                out[file] = reason
    return out


def analyze_logs(rdzvscope, paths, timeout=60):
    """The verdict of `rdzvscope analyze --format json --log P...` as a dict."""
    args = ["analyze", "--format", "json"]
    for p in paths:
        args += ["--log", p]
    rc, out, err = run_cli(rdzvscope, args, timeout=timeout)
    try:
        return json.loads(out)["verdict"]
    except (ValueError, KeyError):
        raise RuntimeError(f"rdzvscope {' '.join(args)} exited {rc}: {err[-2000:]}")


def judge(entry, verdict):
    """'right', 'abstained' or 'wrong', and a rank note ('', 'rank_wrong', 'rank_missing')."""
    got, conf = verdict.get("class"), verdict.get("confidence")
    if entry.cls == "unknown":
        outcome = "right" if got == "unknown" or (conf == "low" and got != "healthy") else "wrong"
    elif got == entry.cls:
        outcome = "right"
    elif got == "unknown":
        outcome = "abstained"
    else:
        outcome = "wrong"
    rank_note = ""
    if outcome == "right" and entry.rank is not None and entry.cls != "unknown":
        r = verdict.get("initiating_rank")
        if r is None:
            rank_note = "rank_missing"
        elif r != entry.rank:
            rank_note = "rank_wrong"
    return outcome, rank_note


def score(results):
    """results: [(entry, verdict, outcome, rank_note)] -> a summary dict."""
    per_class = OrderedDict()
    per_conf = OrderedDict()
    s = {"n": 0, "right": 0, "abstained": 0, "wrong": 0, "high_wrong": 0, "rank_wrong": 0,
         "rank_missing": 0}
    for e, v, outcome, rank_note in results:
        s["n"] += 1
        s[outcome] += 1
        if rank_note:
            s[rank_note] += 1
        if outcome == "wrong" and v.get("confidence") == "high":
            s["high_wrong"] += 1
        c = per_class.setdefault(e.cls, {"n": 0, "right": 0, "abstained": 0, "wrong": 0})
        c["n"] += 1
        c[outcome] += 1
        k = per_conf.setdefault(v.get("confidence") or "-", {"n": 0, "right": 0})
        k["n"] += 1
        k["right"] += outcome == "right"
    s["accuracy"] = s["right"] / s["n"] if s["n"] else 0.0
    s["per_class"] = per_class
    s["per_confidence"] = per_conf
    return s


def format_summary(s):
    lines = [f"{'class':<20} {'logs':>5} {'right':>6} {'abst.':>6} {'wrong':>6} {'acc.':>7}"]
    for cls, c in sorted(s["per_class"].items()):
        lines.append(f"{cls:<20} {c['n']:>5} {c['right']:>6} {c['abstained']:>6} {c['wrong']:>6} "
                     f"{100.0 * c['right'] / c['n']:>6.1f}%")
    lines.append(f"{'overall':<20} {s['n']:>5} {s['right']:>6} {s['abstained']:>6} {s['wrong']:>6} "
                 f"{100.0 * s['accuracy']:>6.1f}%")
    lines.append("by confidence: " + ", ".join(
        f"{k} {v['right']}/{v['n']} ({100.0 * v['right'] / v['n']:.0f}%)"
        for k, v in s["per_confidence"].items()))
    lines.append(f"high-confidence wrong: {s['high_wrong']}; initiating rank wrong: {s['rank_wrong']}, "
                 f"not named: {s['rank_missing']}")
    return "\n".join(lines)
