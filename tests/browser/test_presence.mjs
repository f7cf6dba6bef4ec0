// test_presence.mjs - presence in static/livegate.js, in Debian's headless Chromium against the
// real gateway: two pages (two browser contexts: two visitors) on a presence topic see each
// other join (onJoin, onOccupancy), ask who is here over the WebSocket (presence()), one
// publishes to the other (publish(), a topic rule allowing client publish), and each sees the
// other leave (onLeave) when a page closes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, launchBrowser } from "./lib.mjs";
import { blankPage, waitRecord } from "./page.mjs";

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

// subscribe(topic) in the page, recording its presence callbacks in window.rec.
async function join(page, topic) {
  await page.evaluate(async (topic) => {
    const { subscribe } = await import("./livegate.js");
    const rec = (window.rec = { joins: [], leaves: [], counts: [], states: [], events: [] });
    window.sub = subscribe(topic, {
      shareTabs: false,
      onJoin: (j) => rec.joins.push(...j.members),
      onLeave: (l) => rec.leaves.push(...l.members),
      onOccupancy: (o) => rec.counts.push(o.subscribers),
      onState: (s) => rec.states.push(`${s.state}:${s.transport}`),
      onEvent: (e) => rec.events.push({ id: e.id, data: e.data }),
    });
  }, topic);
}

test("two pages see each other join and leave, ask who is here, and one publishes to the other", async () => {
  const gw = await startGateway({ topic_rules: [{ match: "room/*", presence: true, occupancy_events: true,
                                                  client_publish: true }] });
  try {
    const a = await blankPage(browser, gw.publicUrl);
    await join(a, "room/1");
    const first = await waitRecord(a, "page A's own join", (r) => r.joins.length === 1 && r.counts.includes(1));
    const idA = first.joins[0];
    assert.match(idA, /^client:\d+$/);

    const b = await blankPage(browser, gw.publicUrl);
    await join(b, "room/1");
    const seen = await waitRecord(a, "page B's join on page A", (r) => r.joins.length === 2 && r.counts.includes(2));
    const idB = seen.joins[1];
    assert.notEqual(idA, idB);
    await waitRecord(b, "page B's own join", (r) => r.joins.includes(idB));
    const here = await b.evaluate(() => window.sub.presence("room/1"));
    assert.deepEqual(here, { topic: "room/1", members: [idA, idB].sort(), unlisted: 0 });

    const id = await b.evaluate(() => window.sub.publish("room/1", "hello from B"));
    assert.match(id, /^room\/1@[0-9a-f]{8}:1$/);
    const got = await waitRecord(a, "B's message on page A", (r) => r.events.length === 1);
    assert.deepEqual(got.events, [{ id, data: "hello from B" }]);

    await b.close();
    const gone = await waitRecord(a, "page B's leave on page A", (r) => r.leaves.length === 1);
    assert.deepEqual(gone.leaves, [idB]);
    assert.deepEqual(gone.counts, [1, 2, 1]);
    assert.deepEqual(gone.states, ["connecting:websocket", "open:websocket"]);
    assert.deepEqual(await a.evaluate(() => window.sub.presence("room/1")),
                     { topic: "room/1", members: [idA], unlisted: 0 });
    assert.deepEqual(a.errors, []);
    await a.close();
  } finally {
    assert.equal(await gw.stop(), 0);
  }
});

test("presence() over SSE is refused: it needs the WebSocket", async () => {
  const gw = await startGateway({ topic_rules: [{ match: "room/*", presence: true }] });
  try {
    const page = await blankPage(browser, gw.publicUrl);
    const code = await page.evaluate(async () => {
      const { subscribe } = await import("./livegate.js");
      const joined = new Promise((resolve) => {
        window.sub = subscribe("room/2", { transports: ["sse"], shareTabs: false, onJoin: resolve });
      });
      await joined; // the join notice reached the page over SSE
      try { await window.sub.presence("room/2"); return "answered"; } catch (e) { return e.code; }
    });
    assert.equal(code, "not_supported");
    await page.close();
  } finally {
    assert.equal(await gw.stop(), 0);
  }
});
