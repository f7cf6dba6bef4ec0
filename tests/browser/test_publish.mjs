// test_publish.mjs - sub.publish() of static/livegate.js in Debian's headless Chromium: two
// pages (each its own browser context, so neither shares the other's connection) subscribed to
// a topic a rule opens to client publishes; one publishes, both get each event once, in order,
// with the id its publish() resolved with; a topic outside the rule rejects with the gateway's
// code; a subscription on SSE rejects publish() with transport_cannot_publish.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, launchBrowser, sleep } from "./lib.mjs";
import { blankPage } from "./page.mjs";

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

// subscribe(topics, opts) in the page, recording {id, data} of each event and the states.
async function subscribeIn(page, topics, opts = {}) {
  await page.evaluate(async ([topics, opts]) => {
    const { subscribe } = await import("./livegate.js");
    const rec = (window.rec = { events: [], states: [] });
    window.sub = subscribe(topics, Object.assign(opts, {
      onEvent: (e) => rec.events.push({ id: e.id, data: e.data }),
      onState: (s) => rec.states.push(`${s.state}:${s.transport}`),
    }));
  }, [topics, opts]);
}

async function until(page, what, predicate, timeoutMs = 15000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const rec = await page.evaluate(() => window.rec);
    if (predicate(rec)) return rec;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; record: ${JSON.stringify(rec)}`);
    await sleep(50);
  }
}

// window.sub.publish(topic, data) in the page: {id} or {code, message}.
const publishIn = (page, topic, data) => page.evaluate(([topic, data]) =>
  window.sub.publish(topic, data).then((id) => ({ id }), (e) => ({ code: e.code, message: e.message })),
  [topic, data]);

test("one page publishes, the other receives each event once, in order, with its id", async () => {
  const gw = await startGateway({ topic_rules: [{ match: "room/*", client_publish: true }] });
  try {
    const sender = await blankPage(browser, gw.publicUrl);
    const receiver = await blankPage(browser, gw.publicUrl);
    await subscribeIn(sender, ["room/1"]);
    await subscribeIn(receiver, ["room/1"]);
    await until(sender, "the sender's WebSocket", (r) => r.states.includes("open:websocket"));
    await until(receiver, "the receiver's WebSocket", (r) => r.states.includes("open:websocket"));
    const sent = [];
    for (const data of ["hello", { n: 2, text: "json" }, "bye"]) {
      const answer = await publishIn(sender, "room/1", data);
      assert.ok(answer.id, JSON.stringify(answer));
      sent.push({ id: answer.id, data });
    }
    assert.deepEqual(sent.map((s) => Number(s.id.split(":").pop())), [1, 2, 3]);
    const got = await until(receiver, "3 events", (r) => r.events.length >= 3);
    await sleep(200); // nothing more may follow
    assert.deepEqual((await receiver.evaluate(() => window.rec)).events, sent);
    assert.deepEqual(got.events, sent);
    const own = await until(sender, "its own 3 events", (r) => r.events.length >= 3);
    assert.deepEqual(own.events, sent);

    const refused = await publishIn(sender, "lobby", "x");
    assert.equal(refused.code, "forbidden");
    assert.match(refused.message, /^topic lobby: a client may publish only where/);
    // a refused publish leaves the subscription open
    assert.equal(await sender.evaluate(() => window.sub.state), "open");
    assert.deepEqual(sender.errors, []);
    assert.deepEqual(receiver.errors, []);
    await sender.close();
    await receiver.close();
  } finally {
    assert.equal(await gw.stop(), 0);
  }
});

test("a subscription on SSE cannot publish: rejected with transport_cannot_publish", async () => {
  const gw = await startGateway({ topic_rules: [{ match: "room/*", client_publish: true }] });
  try {
    const page = await blankPage(browser, gw.publicUrl);
    await subscribeIn(page, ["room/2"], { transports: ["sse"] });
    await until(page, "SSE to open", (r) => r.states.includes("open:sse"));
    const answer = await publishIn(page, "room/2", "x");
    assert.deepEqual(answer, { code: "transport_cannot_publish",
      message: "publishing needs the WebSocket transport; this subscription uses sse" });
    await page.close();
  } finally {
    assert.equal(await gw.stop(), 0);
  }
});
