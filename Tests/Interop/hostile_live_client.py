"""What a hostile or careless client meets at `storectl serve`, tried with Python's `websockets`
(PyPI) and bare HTTP, not with Feedstore: another site's page, a page whose name was pointed at
loopback, no token, a restricted token probing names it was not granted, a frame too large. It
prints one JSON object of what each attempt got; the test decides what is right.

Usage: hostile_live_client.py PORT ALLOWED-ORIGIN RESTRICTED-TOKEN FULL-TOKEN
"""

import asyncio
import http.client
import json
import sys

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus


async def close_of(url, **options):
    """How a connection ends when the client only listens: the close code and reason, or the
    first frame the server sent (then the connection is left)."""
    try:
        async with connect(url, **options) as socket:
            try:
                frame = json.loads(await asyncio.wait_for(socket.recv(), 30))
                return {"frame": frame.get("type")}
            except ConnectionClosed as closed:
                return {"code": closed.rcvd.code if closed.rcvd else None, "reason": closed.rcvd.reason if closed.rcvd else None}
    except InvalidStatus as error:
        return {"status": error.response.status_code}


def http_get(port, path, headers, method="GET"):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request(method, path, headers=headers)
    response = connection.getresponse()
    body = response.read().decode("utf-8", "replace")
    return {"status": response.status, "allowOrigin": response.getheader("Access-Control-Allow-Origin"), "body": body[:300]}


async def probes(url, token):
    """A token's subscriptions to names it was not granted, and a frame of 20,000 bytes: the
    error frame each gets."""
    answers = []
    async with connect(f"{url}?token={token}", max_size=1 << 24) as socket:
        assert json.loads(await socket.recv())["type"] == "welcome"
        frames = [
            {"type": "subscribe", "id": "a", "entity": "Secret", "index": "byName", "limit": 10},
            {"type": "subscribe", "id": "b", "entity": "Message", "index": "byNothing", "limit": 10},
            {"type": "subscribe", "id": "c", "entity": "Contact", "index": "byName", "limit": 10},
            {"type": "subscribe", "id": "d", "entity": "Message", "index": "byContact", "prefix": ["x"], "limit": 10},
            {"type": "subscribe", "id": "e", "entity": "Message", "index": "byContact", "prefix": [7], "limit": 10,
             "fields": ["nothing"]},
        ]
        for frame in frames:
            await socket.send(json.dumps(frame))
            answers.append(json.loads(await asyncio.wait_for(socket.recv(), 30)))
        await socket.send(json.dumps({"type": "subscribe", "id": "big", "entity": "Message", "index": "byContact",
                                      "padding": "x" * 20_000}))
        answers.append(json.loads(await asyncio.wait_for(socket.recv(), 30)))
    return answers


async def main():
    port, allowed, restricted, full = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    url = f"ws://127.0.0.1:{port}/live"
    report = {
        "anonymous": await close_of(url),
        "wrongToken": await close_of(f"{url}?token=guess"),
        "otherOrigin": await close_of(f"{url}?token={full}", origin="http://evil.example"),
        "allowedOrigin": await close_of(f"{url}?token={full}", origin=allowed),
        "ownOrigin": await close_of(f"{url}?token={full}", origin=f"http://127.0.0.1:{port}"),
        "noOrigin": await close_of(f"{url}?token={full}"),
        "rebound": http_get(port, f"/live?token={full}", {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}),
        "plainAnonymous": http_get(port, "/live", {}),
        "plainAdmitted": http_get(port, f"/live?token={full}", {}),
        "scriptAllowed": http_get(port, "/feedstore-live.js", {"Origin": allowed}),
        "scriptOther": http_get(port, "/feedstore-live.js", {"Origin": "http://evil.example"}),
        "scriptPreflight": http_get(port, "/feedstore-live.js", {"Origin": allowed}, method="OPTIONS"),
        "probes": await probes(url, restricted),
    }
    print(json.dumps(report))


asyncio.run(main())
