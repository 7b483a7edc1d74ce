"""For tests that run the trainer in a child process and act on what it prints as it runs."""
import time


def read_until(proc, found, timeout=180):
    """The lines of `proc`'s stdout up to and including the first for which `found(line)` holds.
    If none comes within `timeout` seconds, or the process exits first, the process is killed and
    the test fails with everything it printed."""
    t0, lines = time.time(), []
    while time.time() - t0 < timeout:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        lines.append(line)
        if found(line):
            return lines
    proc.kill()
    raise AssertionError("the line waited for did not come:\n" + "".join(lines))
