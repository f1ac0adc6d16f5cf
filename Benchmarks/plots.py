"""Draws the trends of the benchmark results as PNG files beside them in Benchmarks/results, for
Benchmarks/README.md to show above their tables. `tables.py` calls `draw(name, tables)` for each results
file it publishes; each plot reads the same tables the README shows (and watch-peers.csv)."""
import csv
import pathlib
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

results = pathlib.Path(__file__).resolve().parent / "results"


def number(text):
    return float(text.replace(",", "").replace("×", "").strip())


def p50(cell):
    """The p50 of a "p50 / p99" cell."""
    return number(cell.split("/")[0])


def save(fig, name):
    fig.tight_layout()
    target = results / name
    fig.savefig(target, dpi=110)
    plt.close(fig)
    print(f"Benchmarks/results/{name}: drawn")


def watch_peers(suffix=""):
    """Live-list latency against list size: Feedstore's watchers, refetch + diff, GRDB."""
    source = results / f"watch-peers{suffix}.csv"
    if not source.exists():
        return
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
            ax.plot(*zip(*points), style, color=color, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("messages in the store")
    ax.set_ylabel("one-row commit → change delivered, p50 (µs)")
    ax.set_title("Live list update latency (folder list: 1/8 of the rows; unread list: 1/2)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    save(fig, f"watch-peers{suffix}.png")


def durable_commits(tables):
    """Durable one-row commits per second against the number of writers, for each system."""
    table = next((t for t in tables if t["title"].startswith("Durable one-row commits")), None)
    if table is None:
        return
    rows = table["rows"]
    writers = [int(r["writers"]) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 5))
    for column, label, color in [("Feedstore (.full, group commit)", "Feedstore (.full, group commit)", "tab:blue"),
                                 ("GRDB (synchronous = FULL)", "GRDB (synchronous = FULL)", "tab:red"),
                                 ("raw LMDB (synced commits)", "raw LMDB, one put per synced commit", "tab:gray"),
                                 ("raw LMDB, Feedstore's puts", "raw LMDB, Feedstore's puts per synced commit", "tab:green"),
                                 ("raw LMDB, Feedstore's puts in one tree", "raw LMDB, the same puts in one tree", "tab:olive")]:
        if column in table["header"]:
            ax.plot(writers, [number(r[column]) for r in rows], "-o", color=color, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(writers, [str(w) for w in writers])
    ax.set_xlabel("concurrent writers, each waiting for its commit")
    ax.set_ylabel("durable one-row commits per second")
    ax.set_ylim(bottom=0)
    ax.set_title("Durable commits against writers")
    ax.grid(True, alpha=0.3)
    ax.legend()
    save(fig, "durable-commits.png")


def watch_shapes(tables):
    """Commit → batch p50 against rows for every watcher shape (and GRDB's ValueObservation from
    the peers' CSV), and the cost of a commit against the number of watchers."""
    shapes = next((t for t in tables if "rows" in t["header"] and "watcher" in t["header"]), None)
    if shapes is not None:
        latency = next(h for h in shapes["header"] if h.startswith("start of commit → batch"))
        by_shape = {}
        for r in shapes["rows"]:
            by_shape.setdefault(r["watcher"], []).append((number(r["rows"]), p50(r[latency])))
        fig, ax = plt.subplots(figsize=(8, 5))
        for shape, points in by_shape.items():
            ax.plot(*zip(*points), "-o", label=shape)
        peers = results / "watch-peers.csv"
        if peers.exists():
            with open(peers, newline="") as f:
                grdb = [(int(r["rows"]), float(r["grdb_p50_us"])) for r in csv.DictReader(f) if r.get("grdb_p50_us")]
            if grdb:
                ax.plot(*zip(*grdb), "--s", color="tab:red", label="GRDB ValueObservation (peers run)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows in the store")
        ax.set_ylabel("start of commit → batch, p50 (µs)")
        ax.set_title("One-row commit → batch, every watcher shape")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, "watch-shapes.png")
    fanout = next((t for t in tables if t["header"] and t["header"][0] == "watchers"), None)
    if fanout is not None:
        watchers = [number(r["watchers"]) for r in fanout["rows"]]
        fig, ax = plt.subplots(figsize=(8, 5))
        ax.plot(watchers, [number(r["p50 ÷ one watcher"]) for r in fanout["rows"]], "-o",
                label="commit → first watcher's batch, p50 ÷ one watcher")
        ax.plot(watchers, [number(r["CPU ÷ one watcher"]) for r in fanout["rows"]], "-s",
                label="process CPU per commit ÷ one watcher")
        ax.set_xscale("log")
        ax.set_ylim(0, max(2, ax.get_ylim()[1]))
        ax.set_xlabel("watchers on distinct ranges, the commit touching one")
        ax.set_ylabel("ratio to one watcher")
        ax.set_title("Cost of a commit against watchers")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        save(fig, "watch-fanout.png")


def commit_pages(tables):
    """Pages a one-row update writes, by tree, stacked for each store size."""
    table = tables[0] if tables else None
    if table is None:
        return
    sizes = [h for h in table["header"][1:]]
    trees = [r for r in table["rows"] if not r["tree"].startswith("**")]
    fig, ax = plt.subplots(figsize=(8, 5))
    bottoms = [0.0] * len(sizes)
    for r in trees:
        values = [number(r[s]) for s in sizes]
        ax.bar(sizes, values, bottom=bottoms, label=r["tree"])
        bottoms = [b + v for b, v in zip(bottoms, values)]
    ax.set_ylabel("pages written by a one-row update")
    ax.set_title("Pages per one-row commit, by tree")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1, 1))
    save(fig, "commit-pages.png")


def live(suffix=""):
    """Live lists over WebSocket against connections: commit → client latency and the server's CPU
    per commit, Feedstore against GRDB's ValueObservation (live.csv)."""
    source = results / f"live{suffix}.csv"
    if not source.exists():
        return
    with open(source, newline="") as f:
        rows = list(csv.DictReader(f))
    fig, (latency, cpu) = plt.subplots(1, 2, figsize=(11, 4.5))
    for kind, label, color in [("feedstore", "Feedstore", "tab:blue"), ("grdb", "GRDB ValueObservation a connection", "tab:red")]:
        points = [r for r in rows if r["kind"] == kind and r["latency_p50_ms"]]
        if not points:
            continue
        n = [int(r["connections"]) for r in points]
        latency.plot(n, [float(r["latency_p50_ms"]) for r in points], "-o", color=color, label=f"{label}, p50")
        latency.plot(n, [float(r["latency_p99_ms"]) for r in points], "--s", color=color, label=f"{label}, p99")
        cpu.plot(n, [float(r["cpu_per_commit_us"]) for r in points], "-o", color=color, label=label)
    for ax, title in [(latency, "commit → client holds the batch (ms)"), (cpu, "server CPU per commit (µs)")]:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("WebSocket connections, each watching its own 50-row window")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, f"live{suffix}.png")


def draw(name, tables):
    """Draws the plots of results file `name` (its tables as `tables.py` reads them)."""
    if name == "peers":
        durable_commits(tables)
        watch_peers()
    elif name == "watch-shapes":
        watch_shapes(tables)
    elif name == "commit-pages":
        commit_pages(tables)
    elif name == "live":
        live()


if __name__ == "__main__":
    import sys

    # `plots.py watch-peers-quick`: the quick peers run's plot, which tables.py does not publish.
    if len(sys.argv) == 2 and re.fullmatch(r"watch-peers(-quick)?", sys.argv[1]):
        watch_peers(sys.argv[1][len("watch-peers"):])
