"""Run every benchmark workload once and print one table of side-by-side ratios.

    python3 benchmarks/run.py

Each workload's first row is its baseline; the ratio column divides each
system's best time by the baseline's best time from the same run."""
import tape_overhead

WORKLOADS = [tape_overhead]


def print_table(rows):
    header = ("workload", "system", "best", "median", "ratio")
    baselines = {}
    lines = []
    for workload, system, best, median in rows:
        base = baselines.setdefault(workload, best)
        lines.append((workload, system, _ms(best), _ms(median), f"{best / base:.2f}x"))
    widths = [max(len(str(line[i])) for line in [header] + lines) for i in range(len(header))]
    for line in [header] + lines:
        print("  ".join(str(cell).ljust(w) for cell, w in zip(line, widths)).rstrip())


def _ms(seconds):
    return f"{seconds * 1e3:.3f} ms"


if __name__ == "__main__":
    rows = []
    for workload in WORKLOADS:
        rows.extend(workload.run())
    print_table(rows)
