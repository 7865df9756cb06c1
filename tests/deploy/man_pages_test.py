#!/usr/bin/env python3
"""The man pages of docs/man/ against the built CLI, so that they cannot drift from it.

usage: man_pages_test.py RDZVSCOPE MAN_DIR

For rdzvscope.1 and each rdzvscope-COMMAND.1:
  - `man -l --warnings -E UTF-8 PAGE` renders it with status 0 and nothing on stderr (groff's
    warnings, all of them: -ww);
  - its NAME line is `rdzvscope[-COMMAND] - ...`, so that whatis and apropos find it;
  - every option that `rdzvscope [COMMAND] --help` prints, each spelling (-o and --out), appears
    in the rendered page as a word of its own.
Every command that `rdzvscope --help` lists has its page and is named in rdzvscope.1; every
rdzvscope-*.1 is the page of a command that exists. Every finding is listed; exit status 1
when there is one.
"""
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys

if importlib.util.find_spec("rdzvtest") is None:   # run by hand: ctest sets PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from rdzvtest.checks import expect  # noqa: E402
from rdzvtest.cli import run_cli  # noqa: E402

# Wide enough that no option is broken across lines (the pages also say .nh: no hyphenation).
MANWIDTH = "250"
# What groff's UTF-8 output may make of a hyphen or minus sign, and the soft hyphen.
DASHES = {"\u2010": "-", "\u2011": "-", "\u2212": "-", "\u00ad": ""}
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def render(page):
    """(status, text without overstrike formatting, stderr) of `man -l --warnings PAGE`."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAN_KEEP_FORMATTING", "MANOPT", "MANROFFOPT")}
    env.update({"MANWIDTH": MANWIDTH, "MANPAGER": "cat", "PAGER": "cat", "LC_ALL": "C.UTF-8"})
    p = subprocess.run(["man", "-l", "--warnings", "-E", "UTF-8", page], capture_output=True, text=True,
                       env=env, timeout=60)
    text = re.sub(r".\x08", "", p.stdout)
    for k, v in DASHES.items():
        text = text.replace(k, v)
    return p.returncode, text, p.stderr


def help_text(rdzvscope, command):
    args = ([command] if command else []) + ["--help"]
    rc, out, err = run_cli(rdzvscope, args, timeout=30)
    if rc != 0 or not out.strip():
        raise SystemExit(f"`rdzvscope {' '.join(args)}` exited {rc}: {err.strip()[:500]}")
    return out


def help_options(text):
    """The options of a CLI11 help text: on the lines of its option list (indented by a few
    spaces, starting with a dash), the words before the description (which begins after a gap
    of two or more spaces with a word that is no option). Wrapped description lines are
    indented further and not read."""
    opts = set()
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        if not stripped.startswith("-") or len(line) - len(stripped) > 6:
            continue
        column = []
        for segment in re.split(r"\s{2,}", stripped):
            if column and not segment.startswith("-"):
                break
            column.append(segment)
        opts |= set(OPTION.findall(" ".join(column)))
    return opts


def help_commands(text):
    """The commands listed under `Subcommands:` of `rdzvscope --help`."""
    part = re.split(r"^Subcommands:\s*$", text, flags=re.M)
    if len(part) < 2:
        raise SystemExit("`rdzvscope --help` lists no Subcommands:\n" + text)
    names = []
    for line in part[1].splitlines():
        m = re.match(r"^  ([a-z][a-z0-9-]*)(\s|$)", line)
        if m:
            names.append(m.group(1))
        elif line.strip() and not line.startswith(" "):
            break
    return names


def has_word(text, word):
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text) is not None


def check_page(page, name, rdzvscope, command, errors):
    """One page: renders cleanly, its NAME line, every option of --help. Returns its text."""
    where = os.path.basename(page)
    rc, text, err = render(page)
    expect(rc == 0, f"{where}: man -l exited {rc}: {err.strip()[:500]}", errors)
    expect(not err.strip(), f"{where}: man -l --warnings printed:\n{err.strip()[:2000]}", errors)
    name_line = (section(text, "NAME").strip().splitlines() or [""])[0].strip()
    expect(name_line.startswith(name + " - "), f"{where}: the NAME line should be `{name} - ...`: {name_line!r}",
           errors)
    options = section(text, "OPTIONS")
    expect(options, f"{where}: no OPTIONS section", errors)
    opts = help_options(help_text(rdzvscope, command))
    expect(opts, f"{where}: no option found in `rdzvscope {command or ''} --help`", errors)
    missing = sorted(o for o in opts if not has_word(options, o))
    expect(not missing, f"{where}: its OPTIONS section lacks {', '.join(missing)} of "
                        f"`{' '.join(['rdzvscope'] + ([command] if command else []) + ['--help'])}`", errors)
    return text, opts


def section(text, heading):
    """The body of a rendered page's section HEADING (up to the next heading)."""
    m = re.search(r"^" + heading + r"\s*$(.*?)(?=^[A-Z][A-Z ]*[A-Z]\s*$|\Z)", text, re.M | re.S)
    return m.group(1) if m else ""


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    rdzvscope, man_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if shutil.which("man") is None:
        raise SystemExit("man_pages_test: no `man` on the PATH (Debian: apt-get install man-db)")
    errors = []
    commands = help_commands(help_text(rdzvscope, None))
    expect(commands, "`rdzvscope --help` lists no command", errors)

    top = os.path.join(man_dir, "rdzvscope.1")
    expect(os.path.isfile(top), f"no {top}", errors)
    checked = []
    if os.path.isfile(top):
        text, opts = check_page(top, "rdzvscope", rdzvscope, None, errors)
        checked.append(("rdzvscope", len(opts)))
        for c in commands:
            expect(has_word(text, c), f"rdzvscope.1: does not name the command {c}", errors)
            expect(has_word(text, f"rdzvscope-{c}(1)"), f"rdzvscope.1: no reference to rdzvscope-{c}(1)", errors)
    for c in commands:
        page = os.path.join(man_dir, f"rdzvscope-{c}.1")
        expect(os.path.isfile(page), f"the command {c} has no page {page}", errors)
        if os.path.isfile(page):
            _, opts = check_page(page, f"rdzvscope-{c}", rdzvscope, c, errors)
            checked.append((c, len(opts)))
    for page in sorted(glob.glob(os.path.join(man_dir, "rdzvscope-*.1"))):
        c = os.path.basename(page)[len("rdzvscope-"):-len(".1")]
        expect(c in commands, f"{os.path.basename(page)}: rdzvscope has no command {c}", errors)

    for e in errors:
        print("FAIL", e)
    print("man_pages: " + ", ".join(f"{c} ({n} options)" for c, n in checked) +
          (": ok" if not errors else f": {len(errors)} problem(s)"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
