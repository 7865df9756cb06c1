"""The harness's own retries, counted: a job run again because its port was stolen or its
fault did not happen as designed passes on its second run, and would hide a flaky scenario.
Each retry appends one line to the file named by RDZVTEST_RETRY_LOG (ctest sets it for every
test: tests/CMakeLists.txt), and scripts/test.sh prints the count at the end of the run."""
import os
import time


def note_retry(what, why):
    """Records that `what` (a scenario, an injection) is run again because of `why`."""
    path = os.environ.get("RDZVTEST_RETRY_LOG")
    if not path:
        return
    line = f"{time.strftime('%H:%M:%S')}\t{what}\t{' '.join(str(why).split())[:300]}\n"
    # One short write with O_APPEND: concurrent tests do not interleave their lines.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
