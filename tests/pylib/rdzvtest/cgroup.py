"""A memory cgroup of the test's own, for a rank the kernel's OOM killer must choose.

The cgroup is a child of this process's memory cgroup (cgroup v1's memory hierarchy, or v2's
unified one where the memory controller is enabled for children), with a memory limit; the
rank moves itself into it (tests/e2e/rank.py, E2E_FAULT=oom@POINT). What the rank already held
stays charged where it was, so a small limit is hit by what it allocates after the move only.
Standard library only.
"""
import contextlib
import os
import time


def _own_memory_cgroup():
    """(path of this process's memory cgroup, limit file name) or None."""
    with open("/proc/self/cgroup") as f:
        lines = [line.rstrip("\n").split(":", 2) for line in f]
    for _, controllers, path in lines:
        if "memory" in controllers.split(","):
            base = "/sys/fs/cgroup/memory"
            if os.path.isdir(base):
                return base + path, "memory.limit_in_bytes"
    for hid, controllers, path in lines:
        if hid == "0" and controllers == "":
            for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                here = base + path
                try:
                    with open(os.path.join(here, "cgroup.subtree_control")) as f:
                        if "memory" in f.read().split():
                            return here, "memory.max"
                except OSError:
                    continue
    return None


@contextlib.contextmanager
def memory_cgroup(name, limit_bytes):
    """A new memory cgroup `name` with `limit_bytes`, removed on exit (its processes gone).
    Raises RuntimeError, saying why, where none can be made (no memory controller, no
    privilege)."""
    own = _own_memory_cgroup()
    if own is None:
        raise RuntimeError("no memory cgroup controller this test can use (/proc/self/cgroup)")
    parent, limit_file = own
    path = os.path.join(parent, name)
    try:
        os.mkdir(path)
        with open(os.path.join(path, limit_file), "w") as f:
            f.write(str(limit_bytes))
    except OSError as e:
        raise RuntimeError(f"cannot make the memory cgroup {path}: {e}") from e
    try:
        yield path
    finally:
        for _ in range(50):   # the killed process leaves the cgroup once it is reaped
            try:
                os.rmdir(path)
                break
            except OSError:
                time.sleep(0.1)
