"""Run every benchmark workload once and print one table of side-by-side ratios.

    python3 benchmarks/run.py

Each workload's first row is its baseline; the ratio columns divide each
system's best (and median) time by the baseline's from the same run, in which
the systems took turns (see ``_timing.compare``)."""
import jacobian
import tape_overhead

WORKLOADS = [tape_overhead, jacobian]


def print_table(rows):
    """One line per (workload, system): times, and ratios to the workload's first system."""
    header = ("workload", "system", "best", "median", "ratio (best)", "ratio (median)")
    baselines = {}
    lines = []
    for workload, system, best, median in rows:
        base_best, base_median = baselines.setdefault(workload, (best, median))
        lines.append((workload, system, _ms(best), _ms(median),
                      f"{best / base_best:.2f}x", f"{median / base_median:.2f}x"))
    widths = [max(len(line[i]) for line in [header] + lines) for i in range(len(header))]
    for line in [header] + lines:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip())


def _ms(seconds):
    return f"{seconds * 1e3:.3f} ms"


if __name__ == "__main__":
    rows = []
    for workload in WORKLOADS:
        rows.extend(workload.run())
    print_table(rows)
