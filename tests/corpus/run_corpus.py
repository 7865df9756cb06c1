#!/usr/bin/env python3
"""Corpus test (issue 13): `rdzvscope analyze --log` on every log of tests/corpus/manifest.tsv,
the verdict compared with the label; prints the accuracy per class and per confidence level.

    run_corpus.py RDZVSCOPE [--verbose]

Fails when a labelled log is misclassified (or its initiating rank is wrong) and it is not in
known_misses.tsv, when fewer than 90% are right, when more than 2 are wrong at high confidence,
or when high confidence is right less than 95% of the time.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import rdzvtest  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(HERE, "..", "pylib"))

from rdzvtest.corpus import (analyze_logs, format_summary, judge, read_known_misses,  # noqa: E402
                             read_manifest, score)


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    rdzvscope, verbose = argv[1], "--verbose" in argv[2:]
    entries = read_manifest(os.path.join(HERE, "manifest.tsv"))
    known = read_known_misses(os.path.join(HERE, "known_misses.tsv"))
    logs_dir = os.path.join(HERE, "logs")
    results, failures = [], []
    for e in entries:
        paths = e.paths(logs_dir)
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            failures.append(f"{e.file}: missing {missing}")
            continue
        v = analyze_logs(rdzvscope, paths)
        outcome, rank_note = judge(e, v)
        results.append((e, v, outcome, rank_note))
        bad = outcome == "wrong" or rank_note == "rank_wrong"
        line = (f"{outcome:<9} {rank_note:<12} {e.file}: want {e.cls}"
                f"{'' if e.rank is None else ' rank ' + str(e.rank)}, got {v.get('class')}"
                f" rank {v.get('initiating_rank')} ({v.get('confidence')})")
        if bad and e.file in known:
            line += f"  [known miss: {known[e.file]}]"
        elif bad:
            failures.append(line + "\n    " + (v.get("summary") or ""))
        if verbose or bad or outcome == "abstained":
            print(line)
    s = score(results)
    print(format_summary(s))
    if s["accuracy"] < 0.90:
        failures.append(f"accuracy {100 * s['accuracy']:.1f}% is below 90%")
    if s["high_wrong"] > 2:
        failures.append(f"{s['high_wrong']} wrong at high confidence (at most 2)")
    high = s["per_confidence"].get("high")
    if high and high["right"] / high["n"] < 0.95:
        failures.append(f"high confidence right {high['right']}/{high['n']} (below 95%)")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
