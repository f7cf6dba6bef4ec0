"""ws_deflate_client.py - the second, independent permessage-deflate client of test_deflate.mjs:
Python's `websockets` (Debian's python3-websockets), which compresses every message it sends
once the extension is agreed on and inflates what it receives.

    python3 ws_deflate_client.py WS_URL TOPIC COUNT [OFFER_KEY=VALUE...]

Offers permessage-deflate with the given parameters (server_no_context_takeover=1,
server_max_window_bits=15, ...), subscribes to TOPIC with a control message (sent compressed),
prints one JSON line {"extensions": ...} when subscribed, then one line per event message
received until COUNT have arrived, then a last {"pong": ...} line for a ping sent compressed.
"""
import asyncio
import json
import sys

import websockets
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory


def offer(args):
    params = {}
    for arg in args:
        key, value = arg.split("=", 1)
        params[key] = True if value == "1" and key.endswith("takeover") else int(value)
    params.setdefault("client_max_window_bits", True)
    return ClientPerMessageDeflateFactory(**params)


async def main(url, topic, count, args):
    async with websockets.connect(url, subprotocols=["livegate.v1"], extensions=[offer(args)],
                                  compression=None) as ws:
        await ws.send(json.dumps({"op": "subscribe", "topics": [topic]}))
        subscribed = json.loads(await ws.recv())
        print(json.dumps({"extensions": ws.response_headers.get("Sec-WebSocket-Extensions"),
                          "subscribed": subscribed["type"]}), flush=True)
        for _ in range(count):
            print(await ws.recv(), flush=True)
        await ws.send(json.dumps({"op": "ping"}))
        print(json.dumps({"pong": json.loads(await ws.recv())["type"]}), flush=True)


asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]))
