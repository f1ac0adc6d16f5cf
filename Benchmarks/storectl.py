#!/usr/bin/env python3
"""storectl on big stores: the demo feed at 100 thousand and 1 million messages (their journals
hold the load's last commits and 50,000 changes), and the time and peak memory (ru_maxrss: heap and the store's pages
the tool touched) of the jobs users run on them. Run by Benchmarks/run-storectl with the
release storectl; writes Benchmarks/results/storectl.md."""
import datetime
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

root = pathlib.Path(__file__).resolve().parent.parent
storectl = str(root / ".build" / "release" / "storectl")


def run(args, stdout=subprocess.DEVNULL, stdin=None):
    """Seconds and peak memory (MiB) of one storectl run, which must succeed."""
    start = time.perf_counter()
    process = subprocess.Popen([storectl] + args, stdout=stdout, stdin=stdin, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"storectl {' '.join(args)} exited with {process.returncode}: {process.stderr.read().decode()}")
    return elapsed, usage.ru_maxrss / 1024


def first_line(args):
    """Seconds until the first line of output arrives and the tool has exited, as `| head -1` sees it."""
    start = time.perf_counter()
    process = subprocess.Popen([storectl] + args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    process.stdout.readline()
    process.stdout.close()
    process.wait()
    return time.perf_counter() - start


def best(times, f):
    return min(f() for _ in range(times))


def main():
    rows = []
    with tempfile.TemporaryDirectory() as dir:
        for messages in (100_000, 1_000_000):
            store = f"{dir}/s{messages}"
            run(["demo", "populate", store, "--messages", str(messages)])
            run(["demo", "mutate", store, "--commits", "1000", "--per-commit", "50", "--durability", "none", "--quiet"])
            dump = lambda: run(["dump", store, "--entity", "Message", "--format", "jsonl"])
            seconds, memory = min(dump() for _ in range(3))
            label = f"{messages:,}"
            rows.append((f"`dump --format jsonl`, every message ({label})", seconds, memory))
            journal = f"{dir}/journal.jsonl"
            with open(journal, "w") as out:
                seconds, memory = run(["journal", store, "--format", "jsonl", "--keys"], stdout=out)
            with open(journal) as printed:
                entries = sum(1 for _ in printed)
            rows.append((f"`journal --format jsonl --keys`, {entries:,} entries ({label})", seconds, memory))
            seconds, memory = run(["verify", store])
            rows.append((f"`verify` ({label})", seconds, memory))
            if messages < 1_000_000:
                continue
            # The other formats, against jsonl's time in the same run.
            jsonl_seconds = min(dump()[0] for _ in range(3))
            for format in ("table", "csv"):
                seconds, memory = min(run(["dump", store, "--entity", "Message", "--format", format]) for _ in range(3))
                rows.append((f"`dump --format {format}`, every message ({label}; {seconds / jsonl_seconds:.2f}× jsonl)", seconds, memory))
            seconds, memory = min(run(["dump", store, "--entity", "Message", "--offset", "900000", "--limit", "1"]) for _ in range(3))
            rows.append(("`dump --offset 900000 --limit 1` (primary-key order: walked, its pages released)", seconds, memory))
            rows.append(("`dump` piped into `head -1`", best(5, lambda: first_line(["dump", store, "--entity", "Message"])), None))
            for name, args in [
                ("`journal --limit 1`", ["journal", store, "--limit", "1"]),
                ("`journal --tail 1`", ["journal", store, "--tail", "1"]),

                ("`dump --index byFolderDate --offset 900000 --limit 1` (counted)", ["dump", store, "--entity", "Message", "--index", "byFolderDate", "--offset", "900000", "--limit", "1"]),
                ("`count --entity Message`", ["count", store, "--entity", "Message"]),
                ("`count --index byFolderDate --prefix [2]`", ["count", store, "--entity", "Message", "--index", "byFolderDate", "--prefix", "[2]"]),
                ("`inspect`", ["inspect", store]),
            ]:
                rows.append((name, best(5, lambda: run(args)[0]), None))
            exported = f"{dir}/messages.jsonl"
            with open(exported, "w") as out:
                run(["dump", store, "--entity", "Message", "--format", "jsonl"], stdout=out)
            with open(exported) as source:
                seconds, memory = run(["load", f"{dir}/copy", "--entity", "Message", "--like", store, "--quiet"], stdin=source)
            rows.append((f"`load` of that dump into a new store ({messages / seconds:,.0f} records/s)", seconds, memory))
    out = root / "Benchmarks" / "results" / "storectl.md"
    lines = [f"storectl on the demo feed (release build, best of 3–5 runs where repeated), {datetime.date.today()}", "",
             "| job | time | peak memory |", "|---|---:|---:|"]
    for name, seconds, memory in rows:
        shown = f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"
        lines.append(f"| {name} | {shown} | {f'{memory:,.0f} MiB' if memory else '–'} |")
    lines += ["", "Peak memory is the kernel's peak resident size, which counts the store's pages a tool has read as well as its heap; "
              "`dump` and `journal` release the pages they have passed, so theirs stays flat from 100 thousand to a million messages; "
              "`verify` gathers nothing and releases its pages too, so it stays within a few tens of MiB of them."]
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


main()
