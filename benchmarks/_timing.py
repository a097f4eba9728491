"""Timing shared by the workloads: interleaved repeats, best and median."""
import ctypes
import statistics
import time


def _steady_allocator():
    """Fix glibc malloc's thresholds for the whole run.

    By default glibc hands blocks above 128 KiB back to the OS when they are
    freed, and moves that threshold as the process frees big blocks: whether
    a call page-faults on its temporaries then depends on what ran before it
    (one MLP timed 0.93 ms alone and 0.77 ms next to autograd).  Fixed
    thresholds make every system allocate alike, whatever the order."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return  # not glibc: nothing to steady
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_mmap_threshold, 64 << 20)
    libc.mallopt(m_trim_threshold, 256 << 20)


_steady_allocator()


# ``run.py --quick`` sets this: a few short rounds, to check that everything runs.
QUICK = {"on": False}


def compare(systems, rounds=60, budget=2.0, sample=1e-3):
    """Seconds per call of each ``(name, fn)``: a list of ``(name, best, median)``.

    The systems take turns, one sample each per round, so a machine that speeds
    up or slows down during the run (frequency scaling, neighbours) shifts
    all of them alike and their ratios stay meaningful.  A sample is as many
    back-to-back calls as fill ``sample`` seconds (at least one), as a training
    loop makes them: a single call of tens of microseconds right after another
    system's would mostly time the caches that system left cold.  Each is
    called once untimed first; rounds stop early once ``budget`` seconds are spent."""
    if QUICK["on"]:
        rounds, budget, sample = 3, 0.05, 1e-4
    numbers = [_calls_per_sample(fn, sample) for _, fn in systems]
    times = [[] for _ in systems]
    start = time.perf_counter()
    for _ in range(rounds):
        for (_, fn), number, spent in zip(systems, numbers, times):
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            spent.append((time.perf_counter() - t0) / number)
        if time.perf_counter() - start > budget and len(times[0]) >= 3:
            break
    return [(name, min(spent), statistics.median(spent))
            for (name, _), spent in zip(systems, times)]


def _calls_per_sample(fn, sample):
    fn()  # warm-up, untimed
    t0 = time.perf_counter()
    fn()
    once = time.perf_counter() - t0
    return max(1, int(sample / max(once, 1e-9)))
