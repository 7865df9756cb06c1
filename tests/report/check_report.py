#!/usr/bin/env python3
"""Tests of the views of `rdzvscope analyze`: --timeline, --html and --format markdown.

  check_report.py timeline RDZVSCOPE SCENARIO_DIR OUT_DIR
  check_report.py html     RDZVSCOPE SCENARIO_DIR OUT_DIR [--chromium PATH]
  check_report.py escaping RDZVSCOPE OUT_DIR
  check_report.py scale    RDZVSCOPE GEN_JOB OUT_DIR [--chromium PATH]
  check_report.py markdown RDZVSCOPE SCENARIO_DIR OUT_DIR

Scenarios are the stored real runs of tests/golden/ (traces/ + logs/). Every check prints
what it found and exits 1 on the first failure. The HTML checks open the page in headless
Chromium (no network: every fetch is off, and the page has no URL to fetch anyway), read the
DOM it built, and keep a screenshot in OUT_DIR as a test artifact.
"""
import glob
import html.parser
import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest.checks import Fail  # noqa: E402
from rdzvtest.report import check_timeline_file  # noqa: E402


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def analyze(rdzvscope, scenario, *extra, with_traces=True):
    logs = sorted(glob.glob(os.path.join(scenario, "logs", "*.log")))
    cmd = [rdzvscope, "analyze"] + ([os.path.join(scenario, "traces")] if with_traces else [])
    for log in logs:
        cmd += ["--log", log]
    cmd += list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    return p.stdout


def diagnosis(rdzvscope, scenario, with_traces=True):
    return json.loads(analyze(rdzvscope, scenario, "--format", "json", with_traces=with_traces))


# ------------------------------------------------------------------------------- timeline
def cmd_timeline(rdzvscope, scenario, out):
    name = os.path.basename(os.path.normpath(scenario))
    path = os.path.join(out, name + ".timeline.json")
    diag = diagnosis(rdzvscope, scenario)
    analyze(rdzvscope, scenario, "--timeline", path)
    t = check_timeline_file(path, diag)
    # Logs alone: still a valid trace with the verdict, even without rank tracks from traces.
    path_logs = os.path.join(out, name + ".timeline_logs.json")
    analyze(rdzvscope, scenario, "--timeline", path_logs, with_traces=False)
    check_timeline_file(path_logs, diagnosis(rdzvscope, scenario, with_traces=False))
    print(f"ok {name}: {len(t['traceEvents'])} events, {len(diag['ranks'])} rank tracks")


# ----------------------------------------------------------------------------------- html
class Dom(html.parser.HTMLParser):
    """Elements with their attributes and the text inside them; what tests ask of a page."""

    VOID = {"meta", "link", "br", "img", "input", "hr", "circle", "rect", "line", "path"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements, self.stack, self.attr_values, self.tags = [], [], [], []

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs), "text": ""}
        self.elements.append(el)
        self.tags.append((tag, dict(attrs)))
        self.attr_values += [v or "" for _, v in attrs]
        if tag not in self.VOID:
            self.stack.append(el)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self.attr_values += [v or "" for _, v in attrs]
        self.elements.append({"tag": tag, "attrs": dict(attrs), "text": ""})

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i]["tag"] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        for el in self.stack:
            el["text"] += data

    def with_class(self, cls):
        return [e for e in self.elements if cls in (e["attrs"].get("class") or "").split()]

    def by_id(self, id_):
        return [e for e in self.elements if e["attrs"].get("id") == id_]


def parse(text):
    d = Dom()
    d.feed(text)
    return d


def check_self_contained(path, text):
    """No fetch of any kind: no URL in markup (text content may quote anything)."""
    dom = parse(text)
    for tag, attrs in dom.tags:
        if tag == "script":
            fail(f"{path}: has a <script>")
        if tag == "link" or tag == "iframe" or tag == "object" or tag == "embed":
            fail(f"{path}: has a <{tag}>")
        if tag in ("img", "image", "use") and any(k in attrs for k in ("src", "href", "xlink:href")):
            fail(f"{path}: <{tag}> loads something")
    for v in dom.attr_values:
        if "http" in v.lower() or "url(" in v.lower() or "//" in v:
            fail(f"{path}: an attribute holds a URL: {v!r}")
    styles = "".join(e["text"] for e in dom.elements if e["tag"] == "style")
    if "http" in styles or "url(" in styles or "@import" in styles:
        fail(f"{path}: the stylesheet loads something")
    # Markup outside text: strip text nodes and look for any "http" left.
    markup = []

    class Markup(html.parser.HTMLParser):
        def handle_starttag(self, tag, attrs):
            markup.append(self.get_starttag_text())

        def handle_startendtag(self, tag, attrs):
            markup.append(self.get_starttag_text())

    Markup().feed(text)
    if any("http" in m for m in markup):
        fail(f"{path}: 'http' in the markup: {[m for m in markup if 'http' in m][:3]}")


def chromium_cmd(chromium, profile):
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-extensions", "--user-data-dir=" + profile]


def chromium_dom_and_screenshot(chromium, html_path, png_path, height=900):
    """The DOM as Chromium built it, and a 1200 x height screenshot."""
    profile = tempfile.mkdtemp(prefix="rdzv-chromium-")
    try:
        url = "file://" + os.path.abspath(html_path)
        p = subprocess.run(chromium_cmd(chromium, profile) + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
        if p.returncode != 0 or "<html" not in p.stdout:
            fail(f"chromium --dump-dom {html_path}: exit {p.returncode}\n{p.stderr[-2000:]}")
        dom = p.stdout
        if os.path.exists(png_path):
            os.remove(png_path)
        p = subprocess.run(chromium_cmd(chromium, profile) + ["--screenshot=" + os.path.abspath(png_path),
                                                              f"--window-size=1200,{height}", "--hide-scrollbars", url],
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0 or not os.path.exists(png_path):
            fail(f"chromium --screenshot {html_path}: exit {p.returncode}\n{p.stderr[-2000:]}")
        with open(png_path, "rb") as f:
            head = f.read(32)
        if head[:8] != b"\x89PNG\r\n\x1a\n":
            fail(f"{png_path}: not a PNG")
        w, h = struct.unpack(">II", head[16:24])
        if (w, h) != (1200, height) or os.path.getsize(png_path) < 20000:
            fail(f"{png_path}: {w}x{h}, {os.path.getsize(png_path)} bytes: blank or wrong size")
        return dom
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def check_page(dom_text, diag, where):
    dom = parse(dom_text)
    v = dom.by_id("verdict")
    if not v or diag["verdict"]["class"] not in v[0]["text"] or diag["verdict"]["summary"] not in v[0]["text"]:
        fail(f"{where}: the verdict header does not hold {diag['verdict']['class']} and its summary")
    if diag["verdict"]["next_step"] not in "".join(e["text"] for e in dom.by_id("next-step")):
        fail(f"{where}: the next step is missing")
    rows = dom.with_class("row")
    if diag["ranks"] and not rows:
        fail(f"{where}: no chart rows")
    if not diag["ranks"] and not dom.by_id("no-workers"):
        fail(f"{where}: no worker in the traces, and the page does not say so")
    for r in diag["ranks"]:
        if r["late"]:
            late = [e for e in dom.with_class("late") if e["tag"] == "g" and f"rank {r['rank']} " in e["text"]]
            if not late:
                fail(f"{where}: the late rank {r['rank']} has no row marked class=late")
    ini = diag["verdict"]["initiating_rank"]
    if ini is not None and diag["ranks"] and not any(f"rank {ini} " in e["text"] for e in dom.with_class("initiating")):
        fail(f"{where}: the initiating rank {ini} is not highlighted")
    if diag["discriminators"].get("timeout") and any(r["connected"] for r in diag["ranks"]):
        marker = dom.by_id("timeout-marker")
        if not marker or "timeout" not in marker[0]["text"]:
            fail(f"{where}: no timeout marker")
    for sect in ("discriminators", "inputs"):
        if not dom.by_id(sect):
            fail(f"{where}: no {sect} section")
    return dom


def cmd_html(rdzvscope, scenario, out, chromium):
    name = os.path.basename(os.path.normpath(scenario))
    path = os.path.join(out, name + ".html")
    diag = diagnosis(rdzvscope, scenario)
    analyze(rdzvscope, scenario, "--html", path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    check_self_contained(path, text)
    check_page(text, diag, path)
    if chromium:
        png = os.path.join(out, name + ".png")
        check_page(chromium_dom_and_screenshot(chromium, path, png), diag, "chromium DOM of " + path)
        print(f"ok {name}: DOM checked in Chromium, screenshot {png}")
    else:
        print(f"ok {name}: static checks only (no chromium)")


def cmd_escaping(rdzvscope, out):
    """Log text goes into the page: it must arrive as text, never as markup."""
    work = tempfile.mkdtemp(prefix="rdzv-esc-", dir=out)
    log = os.path.join(work, "rank0.log")
    evil = '<img src=x onerror=alert(1)> & "q" \'s http://evil.example/x.js <script src="http://evil.example/a.js"></script>'
    with open(log, "w") as f:
        f.write("[rank0]: RuntimeError: Socket Timeout " + evil + "\n")
        f.write("[rank1]: RuntimeError: Socket Timeout " + evil + "\n")
    page = os.path.join(work, "esc.html")
    p = subprocess.run([rdzvscope, "analyze", "--log", log, "--html", page, "--format", "markdown"],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail(f"analyze --log {log}: exit {p.returncode}\n{p.stderr}")
    with open(page, encoding="utf-8") as f:
        text = f.read()
    if "onerror=alert" in text and "<img src=x" in text:
        fail(f"{page}: log text reached the page as markup")
    check_self_contained(page, text)
    dom = parse(text)
    if not any("<img src=x onerror=alert(1)>" in e["text"] for e in dom.elements):
        fail(f"{page}: the log line is not shown as text (evidence lost?)")
    # Outside fenced blocks (where Markdown shows text as is) a '<' must be escaped.
    prose = re.sub(r"(`{3,})[a-z]*\n.*?\n\1\n", "", p.stdout, flags=re.S)
    if re.search(r"(?<!\\)<(img|script)", prose):
        fail("markdown: log text can inject HTML:\n" + prose)
    if "<img src=x onerror=alert(1)>" not in p.stdout:
        fail("markdown: the exact log line is missing:\n" + p.stdout)
    print("ok escaping: log text shown as text in HTML and Markdown")


def cmd_scale(rdzvscope, gen_job, out, chromium, n=4096):
    job = os.path.join(out, f"job{n}")
    shutil.rmtree(job, ignore_errors=True)
    subprocess.run([gen_job, job, str(n)], check=True, capture_output=True, timeout=300)
    page = os.path.join(out, f"scale{n}.html")
    p = subprocess.run([rdzvscope, "analyze", job, "--format", "json", "--html", page], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail(f"analyze {job}: exit {p.returncode}\n{p.stderr}")
    diag = json.loads(p.stdout)
    size = os.path.getsize(page)
    if size > 3 * 1024 * 1024:
        fail(f"{page}: {size} bytes for {n} ranks (want < 3 MiB)")
    with open(page, encoding="utf-8") as f:
        text = f.read()
    check_self_contained(page, text)
    dom = check_page(text, diag, page)
    hosts = {r["host"] for r in diag["ranks"]}
    host_rows = [e for e in dom.with_class("host") if e["tag"] == "g"]
    if len(host_rows) != len(hosts):
        fail(f"{page}: {len(host_rows)} host rows for {len(hosts)} hosts")
    note = dom.by_id("aggregated-note")
    if not note or "aggregated by host" not in note[0]["text"]:
        fail(f"{page}: no note saying the rows are aggregated")
    rank_rows = [e for e in dom.with_class("row") if "host" not in e["attrs"]["class"].split()]
    if len(rank_rows) > 8:
        fail(f"{page}: {len(rank_rows)} single-rank rows beside the host rows")
    if chromium:
        png = os.path.join(out, f"scale{n}.png")
        check_page(chromium_dom_and_screenshot(chromium, page, png), diag, "chromium DOM of " + page)
    shutil.rmtree(job, ignore_errors=True)
    print(f"ok scale: {n} ranks -> {len(host_rows)} host rows + {len(rank_rows)} rank rows, {size} bytes")


# ------------------------------------------------------------------------------- markdown
def cmd_markdown(rdzvscope, scenario, out):
    name = os.path.basename(os.path.normpath(scenario))
    diag = diagnosis(rdzvscope, scenario)
    md = analyze(rdzvscope, scenario, "--format", "markdown")
    with open(os.path.join(out, name + ".md"), "w") as f:
        f.write(md)
    log_lines = set()
    for log in glob.glob(os.path.join(scenario, "logs", "*.log")):
        with open(log, errors="replace") as f:
            log_lines |= {line.rstrip("\n") for line in f}
    # The first fenced block under "### Error" is the exact error line, byte for byte.
    err = md.split("### Error", 1)
    if len(err) != 2:
        fail(f"{name}.md: no Error section")
    block = err[1].split("```text\n", 1)
    if len(block) != 2:
        fail(f"{name}.md: no fenced error line")
    line = block[1].split("\n", 1)[0]
    # The whole line, byte for byte; only a rank prefix ("[rank3]:", "3: ") may be cut.
    def same(l):
        return l == line or (line and l.endswith(line) and re.fullmatch(r"\s*\[?\w*?\d+\]?:\s*", l[:-len(line)]))
    if not any(same(l) for l in log_lines):
        fail(f"{name}.md: error line {line!r} is not a line of the logs")
    want = {"straggler": "Socket Timeout", "store_killed": "Connection reset by peer"}.get(name)
    if want and want not in line:
        fail(f"{name}.md: error line {line!r} lacks {want!r}")
    for must in (diag["verdict"]["class"], "Reproduced across runs | unknown (one run given)", "PyTorch | 1.13",
                 "First failing rank | rank ", "/tests/e2e/rank.py", "MASTER_PORT="):
        if must not in md:
            fail(f"{name}.md: missing {must!r}")
    print(f"ok {name}: markdown has {line!r}")


def main():
    args = sys.argv[1:]
    chromium = None
    if "--chromium" in args:
        i = args.index("--chromium")
        chromium = args[i + 1]
        del args[i:i + 2]
    what = args[0]
    out = args[-1]
    os.makedirs(out, exist_ok=True)
    try:
        if what == "timeline":
            cmd_timeline(args[1], args[2], out)
        elif what == "html":
            cmd_html(args[1], args[2], out, chromium)
        elif what == "escaping":
            cmd_escaping(args[1], out)
        elif what == "scale":
            cmd_scale(args[1], args[2], out, chromium)
        elif what == "markdown":
            cmd_markdown(args[1], args[2], out)
        else:
            fail("unknown check " + what)
    except Fail as e:   # rdzvtest.report's checks
        fail(str(e))


if __name__ == "__main__":
    main()
