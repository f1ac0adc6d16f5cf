#!/usr/bin/env python3
"""Publishes the benchmark results: copies each results file of Benchmarks/results into
Benchmarks/README.md, between the markers <!-- results:NAME --> and <!-- /results:NAME -->, and
writes the README's headline table (between <!-- results:headline --> markers) from the peer and
lazy-list results, and draws the trends of the files it publishes (plots.py). Run by the scripts
that produce the results; run it by hand after `feedstore-bench COMMAND` to publish that
command's file."""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
results = root / "Benchmarks" / "results"


def replace_block(path, name, text):
    content = path.read_text()
    pattern = re.compile(rf"(<!-- results:{re.escape(name)} -->\n)[\s\S]*?(<!-- /results:{re.escape(name)} -->)")
    if not pattern.search(content):
        sys.exit(f"{path.relative_to(root)} has no <!-- results:{name} --> block")
    path.write_text(pattern.sub(lambda m: m.group(1) + text.strip() + "\n" + m.group(2), content))


def tables(text):
    """The markdown tables of a results file, each with the non-table line before it (its title)."""
    found, title, rows = [], "", None
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if rows is None:
                rows = {"title": title, "header": cells, "rows": []}
            elif not all(set(c) <= set("-:") for c in cells):
                rows["rows"].append(dict(zip(rows["header"], cells)))
        else:
            if rows is not None:
                found.append(rows)
                rows = None
            if line.strip():
                title = line.strip()
    if rows is not None:
        found.append(rows)
    return found


def table(all_tables, title_part):
    for t in all_tables:
        if title_part in t["title"]:
            return t
    sys.exit(f"no table titled '…{title_part}…' in the results")


def times(text):
    """A ratio as "1,234×" or "0.74×", whichever way the results file wrote it."""
    value = float(text.replace("×", "").replace(",", ""))
    return f"{int(value):,}×" if value >= 10 else f"{value:.2f}×"


def headline():
    peers_text = (results / "peers.md").read_text()
    date = re.search(r"\d{4}-\d{2}-\d{2}", peers_text.splitlines()[0]).group(0)
    peers = tables(peers_text)
    live = {r["rows (query rows)"].split(" ")[0]: r for r in table(peers, "A live list of one folder")["rows"]}
    reads = table(peers, "Reads over byFolderDate")["rows"]
    bulk = table(peers, "Bulk insert, 200,000 rows")["rows"]
    durable = {r["writers"]: r for r in table(peers, "Durable one-row commits")["rows"]}
    # Feedstore through its commit log, beside raw LMDB's puts made durable by a log of their own.
    logged = {r["writers"]: r for r in table(peers, "grouped as its group commit groups them")["rows"]}
    kept_table = next((t for t in peers if t["title"].startswith("Commit logs ahead of LMDB")), None)
    kept = {r["writers"]: r for r in kept_table["rows"]} if kept_table else None
    latency = "Feedstore watcher: 1-row commit → batch p50 / p99 µs"

    def durable_raw(r):
        # Against raw LMDB committing Feedstore's own puts, when the run measured it.
        its = r.get("Feedstore ÷ raw LMDB, its puts")
        return f"{times(its)} (its puts)" if its else times(r["Feedstore ÷ raw LMDB"])

    def row(writer_prefix):
        return next(r for r in bulk if r["writer"].startswith(writer_prefix))

    def read(operation):
        return next(r for r in reads if r["operation"].startswith(operation))

    lines = [
        "| release build, one run of the peers | Feedstore | Feedstore ÷ GRDB (SQLite) | Feedstore ÷ raw LMDB |",
        "|---|---:|---:|---:|",
        f"| one-row commit → batch in a live list's hands, 1 million messages, p50 | {live['1,000,000'][latency].split(' / ')[0]} µs "
        f"| {times(live['1,000,000']['GRDB ÷ Feedstore (p50)'])} | – |",
    ]
    if "10,000,000" in live:
        lines.append(f"| the same at 10 million messages, p50 | {live['10,000,000'][latency].split(' / ')[0]} µs | – | – |")
    def number(text):
        return float(text.replace(",", ""))

    # Writers as tasks awaiting each library's async `write`, against GRDB's the same way, and
    # threads calling the blocking ones against each other (runs before that table compared
    # Feedstore's tasks with GRDB's threads).
    shapes_table = next((t for t in peers if "by the shape of the calls" in t["title"]), None)
    shapes = {r["writers"]: r for r in shapes_table["rows"]} if shapes_table else None

    def against_grdb(r, feedstore):
        tasks = number(r[f"{feedstore}: tasks"]) / number(r["GRDB (synchronous = FULL): tasks"])
        threads = number(r[f"{feedstore}: threads"]) / number(r["GRDB: threads"])
        return f"{tasks:.2f}× ({threads:.2f}× both blocking)"

    for writers, label in [("1", "one durable writer"), ("16", "16 concurrent durable writers")]:
        if shapes:
            r = shapes[writers]
            synced, ratio = r["Feedstore, LMDB's syncs: tasks"], against_grdb(r, "Feedstore, LMDB's syncs")
            label += " (a task each, `await write`)"
        else:
            synced, ratio = durable[writers]["Feedstore (.full, group commit)"], times(durable[writers]["Feedstore ÷ GRDB"])
        lines.append(f"| {label}, commits/s | {synced} | {ratio} | {durable_raw(durable[writers])} |")
    for writers, label in [("1", "one durable writer"), ("16", "16 concurrent durable writers")]:
        r = shapes[writers] if shapes else logged[writers]
        value = r["Feedstore, commit log: tasks"] if shapes else r["Feedstore, commit log"]
        ratio = against_grdb(r, "Feedstore, commit log") if shapes else times(r["commit log ÷ GRDB"])
        floor = number(logged[writers]["raw LMDB unsynced, its puts, a tree each, a log synced"])
        against_floor = f"{number(value) / floor:.2f}× (its puts through a log)"
        if kept:
            # The same log keeping its checkpoint's snapshot, as one that can recover must.
            against_floor += f"; {number(value) / number(kept[writers]['raw LMDB, a log synced, the snapshot kept']):.2f}× (the snapshot kept)"
        lines.append(f"| {label} through the commit log (`keepsCommitLog`), commits/s | {value} | {ratio} | {against_floor} |")
    lines += [
        f"| bulk insert, 2 indexes, rows/s | {row('Feedstore')['rows/s']} | {times(row('GRDB')['Feedstore ÷ writer'])} "
        f"| {times(row('raw LMDB, Feedstore')['Feedstore ÷ writer'])} (the same puts) |",
    ]
    for operation, label in [("record at a random position", "record at a random position (`object(at:)`), per s"),
                             ("100-row window", "100-row window at a random position, per s"),
                             ("full scan", "full scan of a folder, rows/s")]:
        r = read(operation)
        # The demo's messages read their stored fields directly; the run also reads them through
        # `Codable`, where it measured that.
        codable = next((c for c in reads if c["operation"].startswith(operation) and c["operation"].endswith("through `Codable`")), None)
        raw = times(r["Feedstore ÷ raw LMDB"]) + (f" ({times(codable['Feedstore ÷ raw LMDB'])} through `Codable`)" if codable else "")
        lines.append(f"| {label} | {r['Feedstore']} | {times(r['Feedstore ÷ GRDB'])} | {raw} |")
    scroll_file = results / "scroll.md"
    if scroll_file.exists():
        screens = {r["messages"]: r for r in tables(scroll_file.read_text())[0]["rows"]}
        if "1,000,000" in screens:
            r = screens["1,000,000"]
            lines.append(f"| a screen of 50 rows of a lazy live list, 1 million messages, a writer committing, p50 "
                         f"| {r['Feedstore fling, per screen p50 / p99 µs'].split(' / ')[0]} µs "
                         f"| {times(r['GRDB ÷ Feedstore, fling / jumps (p50)'].split(' / ')[0])} (`LIMIT/OFFSET`) | – |")
    live_file = results / "live.md"
    if live_file.exists():
        servers = tables(live_file.read_text())[0]["rows"]

        def server(kind, connections):
            return next((r for r in servers if r["server"].startswith(kind) and r["connections"] == connections), None)

        most = max(servers, key=lambda r: number(r["connections"]))["connections"]
        feedstore, peer = server("Feedstore", most), server("GRDB", "1,000")
        own_cpu = server("Feedstore", "1,000")
        if feedstore and peer and own_cpu:
            cpu = number(peer["server CPU per commit (µs)"]) / number(own_cpu["server CPU per commit (µs)"])
            lines.append(f"| one-row commit → the batch in a WebSocket client's hands, {most} connections on one server, p50 / p99 "
                         f"| {feedstore['commit → client holds the batch, p50 / p99 (ms)']} ms "
                         f"| {cpu:,.0f}× less server CPU per commit (`ValueObservation`, 1,000 connections) | – |")
    # The README keeps this one table; watcher shapes, replication and every other measurement
    # live in Benchmarks/README.md.
    notes = [f"Measured {date} on a shared 2-core machine; ratios above 1 mean Feedstore is faster."]
    if any(r["operation"].endswith("through `Codable`") for r in reads):
        notes.append("Reads decode the demo's messages with `StoredFieldsDecodable`; in parentheses, the same reads "
                     "into a type that decodes through `Codable`.")
    notes.append("Watcher shapes, replication over NATS JetStream, method, peers and every table: "
                 "[Benchmarks/README.md](Benchmarks/README.md).")
    return "\n".join(lines + [""] + [" ".join(notes)])


try:
    import plots
except ImportError as error:
    plots = None
    print(f"plots not drawn ({error}): pip install matplotlib")
names = sys.argv[1:] or sorted(p.stem for p in results.glob("*.md") if not p.stem.endswith("-quick"))
readme = root / "Benchmarks" / "README.md"
for name in names:
    text = (results / f"{name}.md").read_text()
    replace_block(readme, name, text)
    print(f"Benchmarks/README.md: {name} from Benchmarks/results/{name}.md")
    if plots is not None:
        plots.draw(name, tables(text))
replace_block(root / "README.md", "headline", headline())
print("README.md: headline table from Benchmarks/results/peers.md, scroll.md and live.md")
