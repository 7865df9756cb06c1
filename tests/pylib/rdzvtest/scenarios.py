"""The scenario list of tests/pylib/scenarios.txt, which CMake reads too (one ctest test per
scenario): the one place where the scenarios are named. See the file for its format."""
import collections
import os

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios.txt")

Scenario = collections.namedtuple("Scenario", "suite name timeout_s variants")


def load(path=PATH):
    """Every scenario of the file, in its order."""
    out = []
    with open(path) as f:
        for line in f:
            fields = line.split("#", 1)[0].split()
            if fields:
                out.append(Scenario(fields[0], fields[1], int(fields[2]), tuple(fields[3:])))
    return out


def names(*suites):
    """The names of the scenarios of these suites, in the file's order."""
    return [s.name for s in load() if s.suite in suites]


def check_table(table, *suites):
    """Raises AssertionError unless `table` (a dict by scenario name) holds exactly the
    scenarios of `suites`."""
    want = names(*suites)
    missing, extra = sorted(set(want) - set(table)), sorted(set(table) - set(want))
    assert not missing and not extra, (f"{os.path.normpath(PATH)} lists {missing} (suites "
                                       f"{', '.join(suites)}) that the table lacks, the table "
                                       f"has {extra} that the file lacks")
