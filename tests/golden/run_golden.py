#!/usr/bin/env python3
"""Golden test of `rdzvscope analyze` on one stored scenario (tests/golden/<name>/).

The inputs are fixed (compacted traces and logs captured from a real run by capture.py), so
the report is deterministic: it is compared whole with expected.json (traces + logs) and
expected_logs.json (logs only), side by side with the inputs, as in Perfetto's diff tests.
The verdict must also match what scenario.json says the real fault was, so that --update
cannot bless a wrong answer.

  run_golden.py RDZVSCOPE DIR [--update]
"""
import difflib
import glob
import json
import os
import subprocess
import sys


def analyze(rdzvscope, scenario_dir, with_traces):
    logs = sorted(glob.glob("logs/*.log", root_dir=scenario_dir))
    cmd = [rdzvscope, "analyze"] + (["traces"] if with_traces else []) + ["--format", "json"]
    for log in logs:
        cmd += ["--log", log]
    p = subprocess.run(cmd, cwd=scenario_dir, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit(f"FAIL {' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    return json.loads(p.stdout)


def check(scenario_dir, name, got, update):
    path = os.path.join(scenario_dir, name)
    text = json.dumps(got, indent=2, sort_keys=False) + "\n"
    if update:
        with open(path, "w") as f:
            f.write(text)
        return True
    if not os.path.exists(path):
        print(f"FAIL {path} is missing (run with --update to create it)")
        return False
    with open(path) as f:
        want = f.read()
    if want == text:
        return True
    print(f"FAIL {path} differs from the report:")
    sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                               "expected", "got", n=2))
    return False


def main():
    rdzvscope, scenario_dir = os.path.abspath(sys.argv[1]), sys.argv[2]
    update = "--update" in sys.argv[3:]
    with open(os.path.join(scenario_dir, "scenario.json")) as f:
        expect = json.load(f)["expect"]
    ok = True
    full = analyze(rdzvscope, scenario_dir, True)
    v = full["verdict"]
    if v["class"] != expect["class"] or v["initiating_rank"] != expect["initiating_rank"]:
        print(f"FAIL verdict {v['class']}/{v['initiating_rank']}, the fault was "
              f"{expect['class']}/{expect['initiating_rank']}")
        ok = False
    if expect.get("cause") and v["cause"] != expect["cause"]:
        print(f"FAIL cause {v['cause']}, want {expect['cause']}")
        ok = False
    ok &= check(scenario_dir, "expected.json", full, update)
    logs_only = analyze(rdzvscope, scenario_dir, False)
    want_class = expect.get("log_only_class")   # a class, or a list of accepted classes
    accepted = want_class if isinstance(want_class, list) else [want_class]
    if want_class and logs_only["verdict"]["class"] not in accepted:
        print(f"FAIL log-only verdict {logs_only['verdict']['class']}, want {want_class}")
        ok = False
    ok &= check(scenario_dir, "expected_logs.json", logs_only, update)
    print(("ok " if ok else "FAILED ") + scenario_dir)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
