"""Plots live-list latency against list size from feedstore-bench's watch-peers CSV.

usage: python3 Benchmarks/plot.py IN.csv OUT.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

source, target = sys.argv[1], sys.argv[2]
with open(source, newline="") as f:
    rows = list(csv.DictReader(f))

series = [
    ("feedstore_p50_us", "Feedstore watcher, folder list", "tab:blue", "-o"),
    ("feedstore_unread_p50_us", "Feedstore watcher, unread list", "tab:blue", "--s"),
    ("refetch_p50_us", "refetch + diff on Feedstore, folder list", "tab:orange", "-o"),
    ("grdb_p50_us", "GRDB ValueObservation, folder list", "tab:red", "-o"),
    ("grdb_unread_p50_us", "GRDB ValueObservation, unread list", "tab:red", "--s"),
]
fig, ax = plt.subplots(figsize=(8, 5))
for key, label, color, style in series:
    points = [(int(r["rows"]), float(r[key])) for r in rows if r.get(key)]
    if points:
        xs, ys = zip(*points)
        ax.plot(xs, ys, style, color=color, label=label)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("messages in the store")
ax.set_ylabel("one-row commit → change delivered, p50 (µs)")
ax.set_title("Live list update latency (folder list: 1/8 of the rows; unread list: 1/2)")
ax.grid(True, which="both", alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(target, dpi=110)
print(f"written {target}")
