#!/usr/bin/env python3
"""Tests of the views of `rdzvscope analyze`: --timeline, --html and --format markdown.

  check_report.py timeline RDZVSCOPE SCENARIO_DIR OUT_DIR
  check_report.py html     RDZVSCOPE SCENARIO_DIR OUT_DIR [--chromium PATH]
  check_report.py escaping RDZVSCOPE OUT_DIR
  check_report.py scale    RDZVSCOPE GEN_JOB OUT_DIR [--chromium PATH]
  check_report.py markdown RDZVSCOPE SCENARIO_DIR OUT_DIR
  check_report.py collective RDZVSCOPE SCENARIO_DIR OUT_DIR [--chromium PATH]
  check_report.py scale_collective RDZVSCOPE GEN_JOB OUT_DIR [--chromium PATH]
  check_report.py flight_recorder RDZVSCOPE DUMP_DIR NO_DUMP_SCENARIO OUT_DIR [--chromium PATH]

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
        el = {"tag": tag, "attrs": dict(attrs), "text": "", "parent": self.stack[-1] if self.stack else None}
        self.elements.append(el)
        self.tags.append((tag, dict(attrs)))
        self.attr_values += [v or "" for _, v in attrs]
        if tag not in self.VOID:
            self.stack.append(el)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self.attr_values += [v or "" for _, v in attrs]
        self.elements.append({"tag": tag, "attrs": dict(attrs), "text": "", "parent": self.stack[-1] if self.stack else None})

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

    def inside(self, el, cls):
        """The nearest enclosing element of class cls, or None."""
        el = el["parent"]
        while el is not None and cls not in (el["attrs"].get("class") or "").split():
            el = el["parent"]
        return el


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


# ----------------------------------------------------------------------------- collective
def collective_parts(diag, scenario):
    """What each rank must show of the first collective after the rendezvous, from the JSON
    diagnosis of the same inputs (each row's collective span): {rank: "never" | "dead" |
    "waited"}. The span's part must agree with the row's stalled and dead flags, its times with
    its part; the scenario's initiating rank must be one of those marked, or the scenario does
    not test this."""
    top = diag.get("collective")
    if not top:
        fail(f"{scenario}: the JSON has no top-level collective")
    for key in ("rendezvous_completed", "first_failure", "first_failed_rank", "timeout_ms", "op", "sequence"):
        if key not in top:
            fail(f"{scenario}: the JSON's collective has no {key!r}: {top}")
    names = {"waited": "waited", "never_entered": "never", "entered_late": "never", "dead": "dead"}
    parts = {}
    for r in diag["ranks"]:
        span = r.get("collective")
        if span is None:
            fail(f"{scenario}: rank {r['rank']}'s JSON row has no collective span: {r}")
        if span["part"] not in names:
            fail(f"{scenario}: rank {r['rank']}'s collective part {span['part']!r} is not one of {sorted(names)}")
        part = names[span["part"]]
        flags = "dead" if r.get("dead") else "never" if r.get("stalled") else "waited"
        if part != flags:
            fail(f"{scenario}: rank {r['rank']}'s collective part {span['part']!r} disagrees with its row's flags ({flags})")
        if (span["how"] is None) == (part == "dead"):
            fail(f"{scenario}: rank {r['rank']}: 'how' must be set exactly on a dead rank's span: {span}")
        if part == "waited" and not (span["entered"] and (span["deadline"] or top["timeout_ms"] is None)):
            fail(f"{scenario}: rank {r['rank']} waited, but its span has no entry or no deadline: {span}")
        if span["part"] == "never_entered" and (span["entered"] or span["deadline"]):
            fail(f"{scenario}: rank {r['rank']} never entered, but its span has an entry: {span}")
        if not span["left_store"] <= span["ended"]:
            fail(f"{scenario}: rank {r['rank']}'s span ends before it begins: {span}")
        parts[r["rank"]] = part
    with open(os.path.join(scenario, "scenario.json")) as f:
        ini = json.load(f)["expect"]["initiating_rank"]
    if parts.get(ini) not in ("dead", "never"):
        fail(f"{scenario}: the initiating rank {ini} is neither stalled nor dead in the diagnosis: {parts}")
    return parts


def check_collective_page(dom_text, diag, parts, where):
    """Each rank's row draws its part in the first collective: a group of class coll-never (or
    coll-late) for the rank that never entered, coll-dead (and no never/late mark) for a dead
    one, coll-waited with its own timeout deadline for the ranks that waited; the legend has
    the phase's entries and the rendezvous' end is marked."""
    dom = parse(dom_text)
    rows = {}
    for g in dom.with_class("coll"):
        row = dom.inside(g, "row")
        if row is None:
            fail(f"{where}: a collective group outside any chart row")
        m = re.match(r"rank (\d+) ", row["text"].lstrip())
        if not m:
            fail(f"{where}: a collective group in a row that names no rank: {row['text'][:80]!r}")
        rows[int(m.group(1))] = (g, row)
    for rank, part in parts.items():
        if rank not in rows:
            fail(f"{where}: rank {rank} has no collective span (ranks with one: {sorted(rows)})")
        g, row = rows[rank]
        cls = set(g["attrs"]["class"].split())
        row_cls = set(row["attrs"]["class"].split())
        want = {"dead": {"coll-dead"}, "never": {"coll-never", "coll-late"}, "waited": {"coll-waited"}}[part]
        if not cls & want:
            fail(f"{where}: rank {rank} should be drawn {part} in the first collective, its group is {sorted(cls)}")
        if part == "dead" and (row_cls & {"late", "stalled"} or "never entered" in g["text"]):
            fail(f"{where}: the dead rank {rank} is drawn late or as never entering: {sorted(row_cls)} {g['text'][:120]!r}")
        if part == "dead" and "died" not in g["text"]:
            fail(f"{where}: the dead rank {rank}'s collective span does not say it died: {g['text'][:200]!r}")
        if part == "waited":
            deadline = [e for e in dom.with_class("mk-coll-deadline") if dom.inside(e, "coll") is g]
            if not deadline or "timeout deadline" not in g["text"]:
                fail(f"{where}: rank {rank} waited in the first collective but its timeout deadline is not drawn")
    legend = [e for e in dom.with_class("coll-legend")]
    for words in ("waiting in the first collective", "never entered it", "dead", "collective timeout deadline",
                  "rendezvous completed"):
        if not any(words in e["text"] for e in legend):
            fail(f"{where}: the legend has no entry for {words!r}")
    if not dom.by_id("rendezvous-completed"):
        fail(f"{where}: the rendezvous' end is not marked")
    marker = dom.by_id("timeout-marker")
    if not marker or "collective timeout deadline" not in marker[0]["text"]:
        fail(f"{where}: the timeout marker is not the first collective's")


def check_collective_text(text, parts, where):
    """The text report's COLLECTIVE section: one line per rank, saying its part."""
    if "\nCOLLECTIVE " not in text:
        fail(f"{where}: no COLLECTIVE section:\n{text}")
    section = text.split("\nCOLLECTIVE ", 1)[1].split("\n\n", 1)[0]
    lines = {int(l.split()[0]): l for l in section.splitlines() if re.match(r"\s+\d+\s", l)}
    want = {"dead": "DEAD: ", "never": ("NEVER ENTERED", "ENTERED LATE"), "waited": "waited in it"}
    for rank, part in parts.items():
        line = lines.get(rank, "")
        if not any(w in line for w in ((want[part],) if isinstance(want[part], str) else want[part])):
            fail(f"{where}: rank {rank}'s COLLECTIVE line does not say {want[part]!r}:\n{section}")
        if part == "dead" and ("NEVER" in line or "LATE" in line):
            fail(f"{where}: the dead rank {rank} is called late or never entering:\n{line}")


def check_collective_timeline(t, diag, parts, where):
    """The Perfetto timeline has the same spans on each rank's track, and the waiting ranks'
    own collective timeout deadlines."""
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in t["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    for rank, part in parts.items():
        track = [k for k, v in threads.items() if v.startswith(f"rank {rank} (")]
        if len(track) != 1:
            fail(f"{where}: rank {rank} has {len(track)} tracks")
        on = [e for e in t["traceEvents"] if (e["pid"], e["tid"]) == track[0]]
        spans = [e["name"] for e in on if e["ph"] == "X" and e.get("cat") == "collective"]
        want = {"dead": "dead in the first collective", "never": ("never entered", "not in the first collective until"),
                "waited": "waiting in the first collective"}[part]
        if not any(any(w in s for w in ((want,) if isinstance(want, str) else want)) for s in spans):
            fail(f"{where}: rank {rank}'s track has no {part} collective span: {spans}")
        deadlines = [e for e in on if e["ph"] == "i" and e.get("cat") == "deadline" and "collective" in e["name"]]
        if part == "waited" and not deadlines:
            fail(f"{where}: rank {rank} waited in the first collective, but no collective deadline on its track")


def cmd_collective(rdzvscope, scenario, out, chromium):
    name = os.path.basename(os.path.normpath(scenario))
    diag = diagnosis(rdzvscope, scenario)
    parts = collective_parts(diag, scenario)
    check_collective_text(analyze(rdzvscope, scenario), parts, name + " (text)")
    path = os.path.join(out, name + ".collective.timeline.json")
    analyze(rdzvscope, scenario, "--timeline", path)
    check_collective_timeline(check_timeline_file(path, diag), diag, parts, path)
    page = os.path.join(out, name + ".collective.html")
    analyze(rdzvscope, scenario, "--html", page)
    with open(page, encoding="utf-8") as f:
        text = f.read()
    check_collective_page(text, diag, parts, page)
    if chromium:
        png = os.path.join(out, name + ".collective.png")
        check_collective_page(chromium_dom_and_screenshot(chromium, page, png), diag, parts, "chromium DOM of " + page)
    print(f"ok {name}: the first collective in text, timeline and HTML{' (Chromium)' if chromium else ''}: {parts}")


def cmd_scale_collective(rdzvscope, gen_job, out, chromium, n=128):
    """Above 64 ranks the chart folds ranks by host: the host rows draw their ranks' part in the
    first collective (gen_job's `collective` job: rank n/2 + 1 stalls after init_process_group),
    the stalled rank keeps its own row."""
    job = os.path.join(out, f"job{n}-collective")
    shutil.rmtree(job, ignore_errors=True)
    subprocess.run([gen_job, job, str(n), "collective"], check=True, capture_output=True, timeout=300)
    page = os.path.join(out, f"scale{n}-collective.html")
    p = subprocess.run([rdzvscope, "analyze", job, "--format", "json", "--html", page], capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        fail(f"analyze {job}: exit {p.returncode}\n{p.stderr}")
    diag = json.loads(p.stdout)
    stalled = n // 2 + 1
    v = diag["verdict"]
    if (v["class"], v["initiating_rank"]) != ("straggler_timeout", stalled):
        fail(f"{job}: verdict {v['class']}/{v['initiating_rank']}, want straggler_timeout/{stalled}: {v['summary']}")
    for r in diag["ranks"]:
        want = "never_entered" if r["rank"] == stalled else "waited"
        if (r.get("collective") or {}).get("part") != want:
            fail(f"{job}: rank {r['rank']}'s JSON span is {r.get('collective')}, want part {want}")
    hosts = {r["host"] for r in diag["ranks"]}
    with open(page, encoding="utf-8") as f:
        text = f.read()
    check_self_contained(page, text)

    def check(dom_text, where):
        dom = check_page(dom_text, diag, where)
        host_rows = [e for e in dom.with_class("host") if e["tag"] == "g"]
        if len(host_rows) != len(hosts):
            fail(f"{where}: {len(host_rows)} host rows for {len(hosts)} hosts")
        for row in host_rows:
            groups = [g for g in dom.with_class("coll") if dom.inside(g, "row") is row]
            if len(groups) != 1 or "coll-waited" not in groups[0]["attrs"]["class"].split():
                fail(f"{where}: host row {row['text'][:60]!r} does not draw its ranks' wait in the first collective")
            g = groups[0]
            if "waited in it" not in g["text"] or "timeout deadlines" not in g["text"]:
                fail(f"{where}: host row {row['text'][:60]!r}: its collective tooltip says {g['text'][:200]!r}")
            if not [e for e in dom.with_class("mk-coll-deadline") if dom.inside(e, "coll") is g]:
                fail(f"{where}: host row {row['text'][:60]!r} draws no collective timeout deadline")
        own = [g for g in dom.with_class("coll-never") if f"rank {stalled} in the first collective" in g["text"]]
        if len(own) != 1:
            fail(f"{where}: rank {stalled} has no row of its own drawn as never entering the first collective")
        note = dom.by_id("aggregated-note")
        if not note or "aggregated by host" not in note[0]["text"]:
            fail(f"{where}: no note saying the rows are aggregated")
        return len(host_rows)

    rows = check(text, page)
    if chromium:
        png = os.path.join(out, f"scale{n}-collective.png")
        check(chromium_dom_and_screenshot(chromium, page, png), "chromium DOM of " + page)
    shutil.rmtree(job, ignore_errors=True)
    print(f"ok scale collective: {n} ranks -> {rows} host rows drawing the first collective, "
          f"rank {stalled} on its own{' (Chromium)' if chromium else ''}")


# ------------------------------------------------------------------------ flight recorder
def analyze_dumps(rdzvscope, dumps, *extra):
    cmd = [rdzvscope, "analyze", "--flight-recorder", dumps] + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    return p.stdout


def fr_rank_words(fr, rank):
    """What a view must say of one rank's part, from the JSON flight_recorder object."""
    if rank in fr["ranks_without_dump"]:
        return "left no dump"
    if rank in fr["behind_ranks"] and fr["kind"] == "never_entered":
        return "never entered it"
    if fr["kind"] == "undecided":
        return "entered it, its last in its dump"
    return "waited in it" if rank in fr["waited_ranks"] else "entered it"


def fr_parting_text(text, where):
    """The text report's FLIGHT RECORDER parting line, unwrapped: the words both views share."""
    if "\nFLIGHT RECORDER (" not in text:
        fail(f"{where}: the text report has no FLIGHT RECORDER section:\n{text}")
    section = text.split("\nFLIGHT RECORDER (", 1)[1].split("\n\n", 1)[0]
    lines = section.split("\n")[1:]
    body = " ".join(l.strip() for l in lines)
    return body.split(" last collective of process group ", 1)[0]


def check_fr_markdown(md, fr, parting, where):
    if "### Flight Recorder" not in md:
        fail(f"{where}: no Flight Recorder section:\n{md}")
    section = md.split("### Flight Recorder", 1)[1].split("\n### ", 1)[0].split("\n_rdzvscope", 1)[0]
    if parting not in section:
        fail(f"{where}: the section does not give the text report's parting {parting!r}:\n{section}")
    op = f"collective {fr['sequence']} ({fr['op']}) of process group {fr['process_group']}"
    if op not in section:
        fail(f"{where}: the section does not name {op!r}:\n{section}")
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            rows[int(cells[0])] = cells
    want_ranks = sorted(int(r) for r in fr["last_sequence"]) + fr["ranks_without_dump"]
    if sorted(rows) != sorted(want_ranks):
        fail(f"{where}: table rows for ranks {sorted(rows)}, want {want_ranks}:\n{section}")
    for r, (_, last, part) in rows.items():
        want_last = str(fr["last_sequence"][str(r)]) if str(r) in fr["last_sequence"] else "no dump"
        if last != want_last or fr_rank_words(fr, r) not in part:
            fail(f"{where}: rank {r}'s row is {rows[r]}, want last {want_last!r} and {fr_rank_words(fr, r)!r}")
        if (part.startswith("**")) != (r in fr["behind_ranks"]):
            fail(f"{where}: rank {r}'s row {rows[r]}: exactly the ranks the others waited for are in bold")


def check_fr_page(dom_text, fr, parting, where):
    dom = parse(dom_text)
    sect = dom.by_id("flight-recorder")
    if len(sect) != 1:
        fail(f"{where}: {len(sect)} Flight Recorder sections")
    p = dom.by_id("fr-parting")
    if not p or p[0]["text"].strip() != parting:
        fail(f"{where}: the parting reads {p[0]['text'] if p else None!r}, the text report {parting!r}")
    def within(el):
        while el is not None and el is not sect[0]:
            el = el["parent"]
        return el is sect[0]

    rows = {}
    for tr in (e for e in dom.elements if e["tag"] == "tr" and within(e)):
        cells = [e["text"].strip() for e in dom.elements if e["tag"] == "td" and e["parent"] is tr]
        if cells:
            rows[int(cells[0])] = (set((tr["attrs"].get("class") or "").split()), cells)
    want_ranks = sorted(int(r) for r in fr["last_sequence"]) + fr["ranks_without_dump"]
    if sorted(rows) != sorted(want_ranks):
        fail(f"{where}: table rows for ranks {sorted(rows)}, want {want_ranks}")
    for r, (cls, cells) in rows.items():
        if fr_rank_words(fr, r) not in cells[2]:
            fail(f"{where}: rank {r}'s row says {cells}, want {fr_rank_words(fr, r)!r}")
        if ("late" in cls) != (r in fr["behind_ranks"]) or ("no-dump" in cls) != (r in fr["ranks_without_dump"]):
            fail(f"{where}: rank {r}'s row is of class {sorted(cls)}: late marks exactly the ranks waited for, "
                 f"no-dump the ranks without a dump (never late)")
    files = [e["text"] for e in dom.elements if e["tag"] == "li" and within(e)]
    if sorted(files) != sorted(fr["files"]):
        fail(f"{where}: the dumps listed are {files}, the JSON's {fr['files']}")


def fr_views(rdzvscope, dumps, name, out, chromium):
    """The JSON, the text report's parting, and the markdown and HTML views of one set of dumps."""
    fr = json.loads(analyze_dumps(rdzvscope, dumps, "--format", "json")).get("flight_recorder")
    if not fr:
        fail(f"{dumps}: the JSON has no flight_recorder")
    parting = fr_parting_text(analyze_dumps(rdzvscope, dumps), name)
    md = analyze_dumps(rdzvscope, dumps, "--format", "markdown")
    with open(os.path.join(out, name + ".md"), "w") as f:
        f.write(md)
    check_fr_markdown(md, fr, parting, name + ".md")
    page = os.path.join(out, name + ".html")
    analyze_dumps(rdzvscope, dumps, "--html", page)
    with open(page, encoding="utf-8") as f:
        text = f.read()
    check_self_contained(page, text)
    check_fr_page(text, fr, parting, page)
    if chromium:
        check_fr_page(chromium_dom_and_screenshot(chromium, page, os.path.join(out, name + ".png")), fr, parting,
                      "chromium DOM of " + page)
    return fr, parting


def cmd_flight_recorder(rdzvscope, dumps, no_dump_scenario, out, chromium):
    """The stored real dumps of tests/e2e/flight_recorder_job.py (4 ranks, rank 2 asleep after
    init_process_group): all four, then ranks 0, 1, 3 alone (rank 2 left no dump), in a folder
    whose name is markup (the page lists the dumps' paths); then a run without dumps."""
    fr, parting = fr_views(rdzvscope, dumps, "flight_recorder", out, chromium)
    if (fr["kind"], fr["behind_ranks"], fr["waited_ranks"], fr["sequence"], fr["op"]) != \
            ("never_entered", [2], [0, 1, 3], 1, "all_reduce"):
        fail(f"{dumps}: the stored dumps should part at rank 2, all_reduce 1: {fr}")
    if "rank 2 never entered collective 1 (all_reduce)" not in parting:
        fail(f"{dumps}: the parting reads {parting!r}")
    subset = os.path.join(out, "fr <b>&'no_dump")
    shutil.rmtree(subset, ignore_errors=True)
    os.makedirs(subset)
    for r in (0, 1, 3):
        shutil.copy(os.path.join(dumps, f"nccl_trace_rank_{r}"), subset)
    fr3, parting3 = fr_views(rdzvscope, subset, "flight_recorder_no_dump", out, chromium)
    if fr3["ranks_without_dump"] != [2] or 2 in fr3["behind_ranks"] or "rank 2 left no dump" not in parting3:
        fail(f"{subset}: rank 2 should be named as leaving no dump, never as behind: {fr3}; {parting3!r}")
    with open(os.path.join(out, "flight_recorder_no_dump.html"), encoding="utf-8") as f:
        if "fr <b>" in f.read():
            fail("flight_recorder_no_dump.html: a dump's path reached the page as markup")
    # No dumps: no section in either view.
    if "flight_recorder" in diagnosis(rdzvscope, no_dump_scenario):
        fail(f"{no_dump_scenario}: a flight_recorder object without dumps")
    md = analyze(rdzvscope, no_dump_scenario, "--format", "markdown")
    page = os.path.join(out, "flight_recorder_none.html")
    analyze(rdzvscope, no_dump_scenario, "--html", page)
    with open(page, encoding="utf-8") as f:
        text = f.read()
    if "Flight Recorder" in md or parse(text).by_id("flight-recorder") or "Flight Recorder" in text:
        fail(f"{no_dump_scenario}: a Flight Recorder section without dumps")
    print(f"ok flight recorder in markdown and HTML{' (Chromium)' if chromium else ''}: {parting!r}; "
          f"without rank 2's dump: {parting3!r}; none without dumps")


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
    # The whole line, byte for byte; only a rank prefix ("[rank3]:", "3: ", a script's "[rank3] ")
    # may be cut.
    def same(l):
        prefix = l[:-len(line)] if line else ""
        return l == line or (line and l.endswith(line) and (re.fullmatch(r"\s*\[?\w*?\d+\]?:\s*", prefix) or
                                                            re.fullmatch(r"\s*\[[Rr]ank\d+\] ", prefix)))
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
        elif what == "scale_collective":
            cmd_scale_collective(args[1], args[2], out, chromium)
        elif what == "markdown":
            cmd_markdown(args[1], args[2], out)
        elif what == "flight_recorder":
            cmd_flight_recorder(args[1], args[2], args[3], out, chromium)
        elif what == "collective":
            cmd_collective(args[1], args[2], out, chromium)
        else:
            fail("unknown check " + what)
    except Fail as e:   # rdzvtest.report's checks
        fail(str(e))


if __name__ == "__main__":
    main()
