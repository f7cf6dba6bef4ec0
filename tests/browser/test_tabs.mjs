// test_tabs.mjs - livegate.js shares one connection among the tabs of an origin (docs/client.md,
// "Many tabs"): three tabs of one Chromium profile subscribed to the same topic hold exactly one
// WebSocket to the gateway (its clients_ws); the leader's tab is closed while events are
// published, another tab takes over from its cursor, and every tab has seen every event id
// exactly once, in order. With {shareTabs: false}, or without BroadcastChannel, each tab has its
// own connection.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, publish, launchBrowser, get, waitFor } from "./lib.mjs";
import { blankPage, startSubscription, waitRecord, record } from "./page.mjs";

let gw, browser;
before(async () => {
  gw = await startGateway();
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  if (gw) assert.equal(await gw.stop(), 0);
});

const stat = async (name) => JSON.parse((await get(`${gw.controlUrl}v1/stats`)).body)[name];
const ids = (rec) => rec.events.map((e) => `${e.topic}:${e.seq}=${e.data}`);
const want = (topic, from, to) => Array.from({ length: to - from + 1 }, (_, i) => `${topic}:${from + i}=d${from + i}`);

// Three tabs of one profile (Web Locks and BroadcastChannel are per profile and origin).
async function tabs(topic, opts, n = 3, prepare) {
  const context = await browser.newContext();
  const pages = [];
  for (let i = 0; i < n; i++) {
    const p = await blankPage(context, gw.publicUrl);
    if (prepare) await p.evaluate(prepare);
    await startSubscription(p, "./livegate.js", [topic], Object.assign({}, opts));
    pages.push(p);
  }
  for (const p of pages) await waitRecord(p, "open", (r) => r.states.some((s) => s.startsWith("open:websocket")));
  return { context, pages };
}

test("three tabs share one connection; the leader's tab closes; no event lost or doubled", async () => {
  const { context, pages } = await tabs("tabs", {});
  await waitFor("one WebSocket for three tabs", async () => (await stat("clients_ws")) === 1);
  const roles = await Promise.all(pages.map((p) => p.evaluate(() => window.sub.role)));
  assert.deepEqual(roles.slice().sort(), ["follower", "follower", "leader"]);
  for (let i = 1; i <= 5; i++) await publish(gw, "tabs", `d${i}`);
  for (const p of pages) await waitRecord(p, "5 events", (r) => r.events.length >= 5);

  // Close the leader's tab, and publish while the next tab takes over.
  const leader = pages[roles.indexOf("leader")];
  const rest = pages.filter((p) => p !== leader);
  await leader.close();
  for (let i = 6; i <= 10; i++) await publish(gw, "tabs", `d${i}`);
  for (const p of rest) await waitRecord(p, "10 events", (r) => r.events.length >= 10);
  await waitFor("one WebSocket again", async () => (await stat("clients_ws")) === 1);
  const after = await Promise.all(rest.map((p) => p.evaluate(() => window.sub.role)));
  assert.deepEqual(after.slice().sort(), ["follower", "leader"]);
  for (let i = 11; i <= 12; i++) await publish(gw, "tabs", `d${i}`);
  for (const p of rest) {
    const rec = await waitRecord(p, "12 events", (r) => r.events.length >= 12);
    assert.deepEqual(ids(rec), want("tabs", 1, 12));
    assert.deepEqual(rec.gaps, []);
    assert.deepEqual(p.errors, []);
  }
  assert.equal(await stat("clients_ws"), 1);
  // Nothing late: a last event reaches each tab once.
  await publish(gw, "tabs", "d13");
  for (const p of rest) assert.deepEqual(ids(await waitRecord(p, "13 events", (r) => r.events.length >= 13)), want("tabs", 1, 13));
  await context.close();
  await waitFor("no WebSocket left", async () => (await stat("clients_ws")) === 0);
});

test("{shareTabs: false}, and a browser without BroadcastChannel: a connection per tab", async () => {
  for (const [what, opts, prepare] of [["shareTabs: false", { shareTabs: false }, null],
                                       ["no BroadcastChannel", {}, () => { delete window.BroadcastChannel; }]]) {
    const { context, pages } = await tabs(`own${what.length}`, opts, 3, prepare);
    await waitFor(`${what}: three WebSockets`, async () => (await stat("clients_ws")) === 3);
    for (const p of pages) assert.equal(await p.evaluate(() => window.sub.role), undefined);
    await publish(gw, `own${what.length}`, "d1");
    for (const p of pages) assert.deepEqual(ids(await waitRecord(p, "1 event", (r) => r.events.length >= 1)), [`own${what.length}:1=d1`]);
    await context.close();
    await waitFor("no WebSocket left", async () => (await stat("clients_ws")) === 0);
  }
});
