"""Metrics files (`--prom`) read by real Prometheus parsers: `promtool check metrics` (Debian's
prometheus package: the format and Prometheus' naming rules) and the Python client's parser
(prometheus_client, the values). Both must be installed (scripts/install-deps.sh): a check that
quietly did not run would be no check."""
import shutil
import subprocess

from rdzvtest.checks import Fail


def promtool_check(path):
    """Fail unless `promtool check metrics` accepts the file without a complaint."""
    promtool = shutil.which("promtool")
    if not promtool:
        raise Fail("promtool is not installed (Debian package prometheus; scripts/install-deps.sh)")
    with open(path, "rb") as f:
        p = subprocess.run([promtool, "check", "metrics"], stdin=f, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
    if p.returncode != 0 or p.stdout.strip():
        raise Fail(f"promtool check metrics {path}: exit {p.returncode}: {p.stdout.strip()[:2000]}")


def parse(path):
    """{(name, frozenset(labels.items())): value} and {family: type}, by prometheus_client."""
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError as e:
        raise Fail(f"prometheus_client is not importable ({e}): run the test with the venv of "
                   "scripts/install-deps.sh")
    with open(path) as f:
        text = f.read()
    samples, types = {}, {}
    try:
        for fam in text_string_to_metric_families(text):
            types[fam.name] = fam.type
            for s in fam.samples:
                samples[(s.name, frozenset(s.labels.items()))] = s.value
    except ValueError as e:
        raise Fail(f"prometheus_client cannot parse {path}: {e}")
    return samples, types


def value(samples, name, **labels):
    """The value of the one sample of `name` whose labels include `labels`."""
    hits = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls)]
    if len(hits) != 1:
        raise Fail(f"{len(hits)} samples of {name} with {labels}")
    return hits[0]


def check_file(path):
    """Both parsers accept the file; returns parse(path)."""
    promtool_check(path)
    return parse(path)
