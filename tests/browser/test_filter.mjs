// test_filter.mjs - livegate.js's `filter` option in Node against the real gateway, on SSE,
// long-poll and WebSocket (when this Node has one): two topics under one filter get only the
// events whose tags match, each with its own topic, seq and data (on a multi-topic SSE stream
// the id of an event moves only its own topic, even when a filter passed events of the
// other); then a resume from the cursor after a filtered stretch gets the next match once,
// with no gap and no duplicate.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { startGateway, waitFor, sleep, sourceDir } from "./lib.mjs";

const lib = await import(path.join(sourceDir, "static/livegate.js"));
const open = [];
let gw;
before(async () => { gw = await startGateway(); });
after(async () => {
  for (const s of open) s.close();
  assert.equal(await gw.stop(), 0);
});

async function publishTagged(topic, data, tags) {
  const res = await fetch(`${gw.controlUrl}v1/topics/${encodeURIComponent(topic)}/events?tags=${tags}`,
                          { method: "POST", body: data });
  assert.equal(res.status, 201, await res.text());
}

function collect(topics, transport, since) {
  const got = { events: [], gaps: [] };
  const sub = lib.subscribe(topics, {
    baseUrl: gw.publicUrl, transports: [transport], since, filter: "kind:a", pollTimeoutS: 2,
    onEvent: (e) => got.events.push(`${e.topic}/${e.seq}=${e.data}`),
    onGap: (g) => got.gaps.push(g.id),
  });
  open.push(sub);
  return { sub, got };
}

for (const transport of ["sse", "poll", "websocket"]) {
  test(`${transport}: only matching events, then a resume past a filtered stretch`, async (t) => {
    if (transport === "websocket" && !globalThis.WebSocket) return t.skip(`Node ${process.version} has no WebSocket`);
    const [a, b] = [`fa-${transport}`, `fb-${transport}`];
    const { sub, got } = collect([a, b], transport);
    await waitFor("open", () => sub.state === "open");
    await publishTagged(a, "a1", "kind:b");
    await publishTagged(b, "b1", "kind:a");
    await publishTagged(a, "a2", "kind:a,region:eu");
    await publishTagged(b, "b2", "kind:c");
    await publishTagged(a, "a3", "kind:a");
    await waitFor("3 matching events", () => got.events.length === 3);
    await sleep(200);
    assert.deepEqual(got.events, [`${b}/1=b1`, `${a}/2=a2`, `${a}/3=a3`]);
    const cursor = sub.cursor();
    sub.close();

    await publishTagged(a, "a4", "kind:b");
    await publishTagged(b, "b3", "kind:a");
    const again = collect([a, b], transport, cursor);
    await waitFor("the next match", () => again.got.events.length === 1);
    await publishTagged(a, "a5", "kind:a");
    await waitFor("a live one", () => again.got.events.length === 2);
    await sleep(200);
    again.sub.close();
    assert.deepEqual(again.got.events, [`${b}/3=b3`, `${a}/5=a5`]);
    assert.deepEqual([...got.gaps, ...again.got.gaps], []);
  });
}
