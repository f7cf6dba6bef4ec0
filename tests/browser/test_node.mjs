// test_node.mjs - static/livegate.js imported by Node against the real gateway: SSE and
// long-poll through Node's fetch, and the cursor handed from one subscription to the next
// (resume after close: only what was published since, once). WebSocket too when this Node
// has a global WebSocket (Node 20 with --experimental-websocket, as ctest runs it there; Node
// 18, Debian 12's own, has none, and the client leaves that transport out by itself); a topic
// deleted by the admin API ends with onEnd.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { startGateway, publish, waitFor, sleep, sourceDir } from "./lib.mjs";

const lib = await import(path.join(sourceDir, "static/livegate.js"));
const open = []; // every subscription, closed at the end even when its test failed
const subscribe = (topics, opts) => { const s = lib.subscribe(topics, opts); open.push(s); return s; };
let gw;
before(async () => { gw = await startGateway(); });
after(async () => {
  for (const s of open) s.close();
  assert.equal(await gw.stop(), 0);
});

async function collect(topic, transports, since) {
  const got = { events: [], states: [], resets: [] };
  const sub = subscribe([topic], {
    baseUrl: gw.publicUrl, transports, since, pollTimeoutS: 2,
    onEvent: (e) => got.events.push(`${e.seq}=${e.data}@${e.transport}`),
    onReset: (r) => got.resets.push(r.id),
    onState: (s) => { got.states.push(`${s.state}:${s.transport}`); if (process.env.DBG) console.log(s); },
  });
  await waitFor(`${transports} to open`, () => sub.state === "open");
  return { sub, got };
}

for (const transport of ["sse", "poll", "websocket"]) {
  test(`${transport}: events once and in order, then a resume from the cursor`, async (t) => {
    if (transport === "websocket" && !globalThis.WebSocket) {
      assert.ok(Number(process.versions.node.split(".")[0]) < 20, "Node 20+ is run with --experimental-websocket");
      t.diagnostic(`Node ${process.version} has no WebSocket: the client leaves it out`);
      const { sub, got } = await collect(`node-${transport}`, ["websocket", "poll"]);
      assert.deepEqual(got.states, ["connecting:poll", "open:poll"]);
      sub.close();
      return;
    }
    const topic = `node-${transport}`;
    const { sub, got } = await collect(topic, [transport]);
    for (let i = 1; i <= 4; i++) await publish(gw, topic, `d${i}`);
    await waitFor("4 events", () => got.events.length === 4);
    const cursor = sub.cursor();
    sub.close();
    assert.equal(sub.state, "closed");
    assert.deepEqual(got.events, [1, 2, 3, 4].map((i) => `${i}=d${i}@${transport}`));
    assert.match(cursor, new RegExp(`^${topic}@[0-9a-f]{8}:4$`));

    for (let i = 5; i <= 6; i++) await publish(gw, topic, `d${i}`);
    const again = await collect(topic, [transport], cursor);
    await waitFor("the 2 missed events", () => again.got.events.length === 2);
    await publish(gw, topic, "d7");
    await waitFor("a live one", () => again.got.events.length === 3);
    await sleep(200);
    again.sub.close();
    assert.deepEqual(again.got.events, [5, 6, 7].map((i) => `${i}=d${i}@${transport}`));
  });
}

test("a cursor from another epoch: reset, then live events", async () => {
  const { sub, got } = await collect("node-reset", ["poll"], "node-reset@00000000:3");
  await waitFor("the reset", () => got.resets.length === 1);
  assert.match(got.resets[0], /^node-reset@[0-9a-f]{8}:0$/);
  await publish(gw, "node-reset", "x");
  await waitFor("the event", () => got.events.length === 1);
  sub.close();
  assert.deepEqual(got.events, ["1=x@poll"]);
});

test("a refused subscription ends with onEnd and the gateway's error code", async () => {
  const ended = await new Promise((resolve) => {
    subscribe(["bad topic"], { baseUrl: gw.publicUrl, transports: ["sse"], onEnd: resolve });
  });
  assert.equal(ended.reason, "error");
  assert.equal(ended.error.code, "invalid_topic");
});

for (const transport of ["sse", "poll", "websocket"]) {
  test(`${transport}: a deleted topic ends with onEnd and leaves the others flowing`, async (t) => {
    if (transport === "websocket" && !globalThis.WebSocket) return t.skip(`Node ${process.version} has no WebSocket`);
    const [a, b] = [`end-a-${transport}`, `end-b-${transport}`];
    const ends = [], events = [];
    const sub = subscribe([a, b], {
      baseUrl: gw.publicUrl, transports: [transport], pollTimeoutS: 2,
      onEvent: (e) => events.push(`${e.topic}/${e.seq}`),
      onEnd: (e) => ends.push(e.topic ? `${e.reason} ${e.topic}` : e.reason),
    });
    await waitFor("open", () => sub.state === "open");
    await publish(gw, a, "1");
    await waitFor("a's event", () => events.length === 1);
    // A long-poll is subscribed only while it is held: delete once the gateway lists the client
    // (between two polls the topic would just be gone, and the next poll would find a new one).
    const del = async (topic) => {
      await waitFor(`a client of ${topic}`, async () =>
        (await (await fetch(`${gw.controlUrl}v1/clients?topic=${topic}`)).json()).clients.length === 1);
      const res = await fetch(`${gw.controlUrl}v1/topics/${topic}`, { method: "DELETE" });
      assert.equal(res.status, 200, await res.text());
    };
    await del(a);
    await waitFor("a's end", () => ends.length === 1);
    assert.deepEqual(ends, [`topic_end ${a}`]);
    await waitFor("open again", () => sub.state === "open");
    await publish(gw, b, "2");
    await waitFor("b's event", () => events.length === 2);
    assert.doesNotMatch(sub.cursor(), new RegExp(a));
    await del(b);
    await waitFor("the end of the subscription", () => ends.length === 3);
    assert.deepEqual(ends, [`topic_end ${a}`, `topic_end ${b}`, "ended"]);
    assert.deepEqual(events, [`${a}/1`, `${b}/1`]);
    assert.equal(sub.state, "closed");
  });
}

// Where a subscription without a cursor starts: since "latest" and rewind (docs/client.md);
// a reconnect after the first position resumes from the cursor, so nothing repeats.
for (const transport of ["sse", "poll", "websocket"]) {
  test(`${transport}: since "latest" and rewind, then live events`, async (t) => {
    if (transport === "websocket" && !globalThis.WebSocket) return t.skip(`Node ${process.version} has no WebSocket`);
    const topic = `start-${transport}`;
    for (let i = 1; i <= 5; i++) await publish(gw, topic, `d${i}`);
    const latest = await collect(topic, [transport], "latest");
    await waitFor("the newest event", () => latest.got.events.length === 1);
    const rewound = subscribe([topic], { baseUrl: gw.publicUrl, transports: [transport], rewind: 3, pollTimeoutS: 2,
                                         onEvent: (e) => got.push(`${e.seq}=${e.data}@${e.transport}`) });
    const got = [];
    await waitFor("the last 3 events", () => got.length === 3);
    await publish(gw, topic, "d6");
    await waitFor("a live one on both", () => latest.got.events.length === 2 && got.length === 4);
    await sleep(200);
    latest.sub.close();
    rewound.close();
    // SSE takes its first position with a poll, which carries the start's events
    const via = (i) => (transport === "sse" && i < 6 ? "poll" : transport);
    assert.deepEqual(latest.got.events, [5, 6].map((i) => `${i}=d${i}@${via(i)}`));
    assert.deepEqual(got, [3, 4, 5, 6].map((i) => `${i}=d${i}@${via(i)}`));
  });
}
