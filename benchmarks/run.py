"""Run every benchmark workload once and print one table of side-by-side ratios.

    python3 benchmarks/run.py

Each workload's first row is its baseline; the ratio columns divide each
system's best (and median) time by the baseline's from the same run, in which
the systems took turns (see ``_timing.compare``)."""
import compile_scaling
import compiler
import jacobian
import tape_overhead

WORKLOADS = [tape_overhead, jacobian, compiler, compile_scaling]


def print_table(rows):
    """One line per (workload, system): times, and ratios to the workload's first system.

    A row is ``(workload, system, best, median)``, optionally followed by the
    peak bytes of one call (or None) and a note (e.g. a target met or missed);
    those columns are printed when some row has them."""
    header = ("workload", "system", "best", "median", "ratio (best)", "ratio (median)",
              "peak mem", "mem ratio", "note")
    baselines = {}
    lines = []
    for workload, system, best, median, *extra in rows:
        peak, note = (list(extra) + [None, ""])[:2]
        base_best, base_median, base_peak = baselines.setdefault(workload, (best, median, peak))
        mem_ratio = f"{peak / base_peak:.2f}x" if peak is not None and base_peak else ""
        lines.append((workload, system, _duration(best), _duration(median),
                      f"{best / base_best:.2f}x", f"{median / base_median:.2f}x",
                      _bytes(peak), mem_ratio, note))
    # the time columns always, the others when some row fills them
    shown = [i for i in range(len(header)) if i < 6 or any(line[i] for line in lines)]
    widths = {i: max(len(line[i]) for line in [header] + lines) for i in shown}
    for line in [header] + lines:
        print("  ".join(line[i].ljust(widths[i]) for i in shown).rstrip())


def _duration(seconds):
    return f"{seconds * 1e3:.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.2f} us"


def _bytes(count):
    if count is None:
        return ""
    return f"{count / 2 ** 20:.2f} MiB" if count >= 2 ** 20 else f"{count / 2 ** 10:.1f} KiB"


if __name__ == "__main__":
    rows = []
    for workload in WORKLOADS:
        rows.extend(workload.run())
    print_table(rows)
