"""Reads what Feedstore writes to NATS JetStream with nats-py, a client that is not Feedstore's.

Usage: nats_py_reads_replication.py URL STREAM BUCKET OUTPUT_FILE

Lists the bucket with nats-py's Object Store, fetches the newest Feedstore snapshot (nats-py
checks its digest against the description; this script checks it again with hashlib) into
OUTPUT_FILE, and prints one JSON object: the objects listed, the snapshot fetched, and every
message of the stream as its JSON envelope says it.
"""
import asyncio
import base64
import hashlib
import json
import sys

import nats


async def main(url, stream, bucket, output):
    nc = await nats.connect(url)
    js = nc.jetstream()
    store = await js.object_store(bucket)
    listed = await store.list()
    snapshots = [info for info in listed if (info.headers or {}).get("Feedstore-Commit")]
    newest = max(snapshots, key=lambda info: int(info.headers["Feedstore-Commit"][0]))
    result = await store.get(newest.name)
    data = result.data
    with open(output, "wb") as file:
        file.write(data)
    digest = "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()

    info = await js.stream_info(stream)
    envelopes = []
    for sequence in range(info.state.first_seq, info.state.last_seq + 1):
        message = await js.get_msg(stream, sequence)
        envelope = json.loads(message.data)
        envelopes.append({
            "streamSequence": sequence,
            "id": (message.headers or {}).get("Nats-Msg-Id"),
            "store": envelope["source"]["store"],
            "sequence": envelope["source"]["sequence"],
            "entities": sorted({entry["entity"] for entry in envelope.get("entries", [])}),
            "entries": len(envelope.get("entries", [])),
            "promotion": envelope.get("promotion"),
        })
    await nc.close()
    print(json.dumps({
        "objects": sorted(info.name for info in listed),
        "snapshot": {"name": newest.name, "size": len(data), "described": newest.size,
                     "digest": digest, "describedDigest": newest.digest,
                     "store": newest.headers["Feedstore-Store"][0], "commit": int(newest.headers["Feedstore-Commit"][0])},
        "envelopes": envelopes,
    }))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
