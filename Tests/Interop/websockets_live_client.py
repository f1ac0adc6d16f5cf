"""A live-query client written with Python's `websockets` (PyPI), not with Feedstore: it
subscribes, applies every batch to a sectioned copy by the change-batch contract, fills
indexes-mode rows with `rows` requests, drops its connection once midway and resumes it, and
prints the copy as JSON once it has applied every commit up to a sequence.

Usage: websockets_live_client.py URL TOKEN QUERY-JSON UNTIL-SEQUENCE
Prints `ready` after the first batch, `resumed` when the server resumed its session, then the copy: [{"key": [...], "rows": [...]}, ...].
"""

import asyncio
import json
import sys

from websockets.asyncio.client import connect


def apply_batch(sections, batch):
    """The contract: rows leave at old paths (deletes, move sources; from the last), deleted
    sections go, new sections come, rows arrive at new paths (inserts, move destinations; from
    the first), updated rows are replaced. In indexes mode rows are None until filled."""
    if batch["initial"] or batch["reset"]:
        sections.clear()
    removals = []
    for d in batch["deletes"]:
        s, r = d["at"]
        removals += [(s, r + k) for k in range(d.get("count", 1))]
    for m in batch["moves"]:
        removals.append(tuple(m["from"]))
    if len(set(removals)) != len(removals):
        raise ValueError("a row removed twice")
    for s, r in sorted(removals, reverse=True):
        del sections[s]["rows"][r]
    for s in sorted((d["at"] for d in batch["sectionDeletes"]), reverse=True):
        if sections[s]["rows"]:
            raise ValueError(f"section {s} deleted while not empty")
        del sections[s]
    for insert in batch["sectionInserts"]:
        sections.insert(insert["at"], {"key": insert["key"], "rows": []})
    additions = [(tuple(m["to"]), m.get("record")) for m in batch["moves"]]
    for i in batch["inserts"]:
        s, r = i["at"]
        if "count" in i:
            additions += [((s, r + k), None) for k in range(i["count"])]
        else:
            additions.append(((s, r), i["record"]))
    for (s, r), row in sorted(additions, key=lambda a: a[0]):
        if r > len(sections[s]["rows"]):
            raise ValueError(f"no place [{s}, {r}]")
        sections[s]["rows"].insert(r, row)
    for u in batch["updates"]:
        s, r = u["to"]
        sections[s]["rows"][r] = u.get("record")


def fill_rows(sections, frame):
    for row in frame["rows"]:
        s, r = row["at"]
        sections[s]["rows"][r] = row["record"]


async def main():
    url, token, query, until = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
    headers = {"Authorization": f"Bearer {token}"}
    sections, applied, session = [], None, None
    indexes = query.get("mode") == "indexes"
    dropped, changed = False, False

    async def rows_if_needed(socket):
        count = sum(len(s["rows"]) for s in sections)
        if indexes and count and any(r is None for s in sections for r in s["rows"]):
            await socket.send(json.dumps({"type": "rows", "id": 1, "offset": 0, "limit": count}))
            return True
        return False

    while True:
        async with connect(url, additional_headers=headers, max_size=None) as socket:
            if session is None:
                await socket.send(json.dumps({"type": "subscribe", "id": 1, **query}))
            else:
                await socket.send(json.dumps({"type": "resume", "session": session,
                                              "subscriptions": [{"id": 1, **query, "applied": applied}]}))
            asking = False
            async for text in socket:
                frame = json.loads(text)
                if frame["type"] == "welcome":
                    session = frame["session"]
                    if frame["resumed"]:
                        print("resumed", flush=True)
                    continue
                if frame["type"] == "error":
                    raise RuntimeError(f"error frame: {frame}")
                if frame["type"] == "rows":
                    fill_rows(sections, frame)
                    asking = False
                elif frame["type"] == "batch":
                    first = applied is None
                    changed = changed or not frame["initial"]
                    apply_batch(sections, frame)
                    applied = frame["toSequence"]
                    if first:
                        print("ready", flush=True)
                if not asking:
                    asking = await rows_if_needed(socket)
                if asking:
                    continue
                if applied is not None and applied >= until:
                    print(json.dumps(sections), flush=True)
                    return
                if changed and not dropped:
                    # Drop the connection once, midway, and resume on a new one.
                    dropped = True
                    break


asyncio.run(main())
