"""Timing shared by the workloads: interleaved repeats, best and median."""
import statistics
import time


def compare(systems, rounds=60, budget=2.0):
    """Seconds per call of each ``(name, fn)``: a list of ``(name, best, median)``.

    The systems take turns, one call each per round, so a machine that speeds
    up or slows down during the run (frequency scaling, neighbours) shifts
    all of them alike and their ratios stay meaningful.  Each is called once
    untimed first; rounds stop early once ``budget`` seconds are spent."""
    for _, fn in systems:
        fn()
    times = [[] for _ in systems]
    start = time.perf_counter()
    for _ in range(rounds):
        for (_, fn), spent in zip(systems, times):
            t0 = time.perf_counter()
            fn()
            spent.append(time.perf_counter() - t0)
        if time.perf_counter() - start > budget and len(times[0]) >= 3:
            break
    return [(name, min(spent), statistics.median(spent))
            for (name, _), spent in zip(systems, times)]
