// test_eventsource.mjs - a browser's native EventSource (not livegate.js) in Debian's headless
// Chromium against a gateway that refuses it: (a) full at limits.max_connections, where every
// attempt is answered 200 with a `refused` event and a jittered retry: (docs/protocol.md,
// "Refusals"), and (b) draining and then replaced by a new process on the same port. In both
// the EventSource never closes for good (readyState 2), keeps reconnecting, and receives
// events once room comes back or the new process is up: (a) with its cursor, every event
// published meanwhile, once, in order; (b) the memory store's new process has a new epoch, so
// `reset` comes first and every event published from then on arrives once, in order. And (c)
// behind docs/deploy/nginx.conf, whose 502 for an unreachable gateway is answered on /live/sse
// as a `refused` event too: a restart of the gateway behind it is survived the same way.
// Last, livegate.js reads the same `refused` event: it reports it and retries over SSE.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, startNginx, deployConf, launchBrowser, publish, freePort, tempDir, get, sleep, waitFor } from "./lib.mjs";
import { blankPage, startSubscription, record, waitRecord } from "./page.mjs";

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

const RETRY_MS = 300; // sse.retry_ms: refusals retry in [100, 500] ms

// Opens `new EventSource(url)` in the page; window.log records what it reports, in order:
// "open", "error <readyState>", "refused <data>", "reset <lastEventId>", "<lastEventId> <data>".
async function openEventSource(page, url) {
  await page.evaluate((url) => {
    const log = (window.log = []);
    const es = (window.es = new EventSource(url));
    es.onopen = () => log.push("open");
    es.onerror = () => log.push(`error ${es.readyState}`);
    es.onmessage = (e) => log.push(`${e.lastEventId} ${e.data}`);
    es.addEventListener("refused", (e) => log.push(`refused ${e.data}`));
    es.addEventListener("reset", (e) => log.push(`reset ${e.lastEventId}`));
  }, url);
}
const pageLog = (page) => page.evaluate(() => window.log);
const stat = async (gw, name) => (await (await fetch(`${gw.controlUrl}v1/stats`)).json())[name];

test("a full gateway: EventSource keeps retrying on refused events, then gets every event from its cursor", async () => {
  const max = 3;
  const gw = await startGateway({ limits: { max_connections: max, keepalive_timeout_ms: 200 }, sse: { retry_ms: RETRY_MS } });
  const fillers = [];
  try {
    const page = await blankPage(browser, gw.publicUrl);
    await waitFor("the page's connection to close", async () => (await stat(gw, "connections_open")) === 0);
    const cursor = (await publish(gw, "full", "seen")).id;
    for (let i = 0; i < max; i++) fillers.push(await get(`${gw.publicUrl}sse?topic=filler`, { onData() {} }));
    await waitFor("the gateway to be full", async () => (await stat(gw, "connections_open")) === max);
    const refused0 = await stat(gw, "connections_refused");

    await openEventSource(page, `sse?topic=full&last_event_id=${encodeURIComponent(cursor)}`);
    await waitFor("a first refusal", async () => (await pageLog(page)).some((l) => l.startsWith("refused")));
    const want = [];
    for (const d of ["two", "three"]) want.push(`${(await publish(gw, "full", d)).id} ${d}`);
    await waitFor("three refusals", async () => (await pageLog(page)).filter((l) => l.startsWith("refused")).length >= 3);
    assert.ok((await stat(gw, "connections_refused")) - refused0 >= 3);

    fillers.pop().req.destroy(); // room for one
    await waitFor("the events published while full", async () => (await pageLog(page)).filter((l) => !/^(open|error|refused)/.test(l)).length >= 2);
    want.push(`${(await publish(gw, "full", "four")).id} four`);
    await waitFor("the next event", async () => (await pageLog(page)).filter((l) => !/^(open|error|refused)/.test(l)).length >= 3);
    await sleep(300); // nothing more may follow
    const log = await pageLog(page);
    assert.deepEqual(log.filter((l) => !/^(open|error|refused)/.test(l)), want);
    for (const l of log.filter((l) => l.startsWith("refused"))) {
      const r = JSON.parse(l.slice(8));
      assert.deepEqual([r.status, r.error, r.message], [503, "unavailable", "the gateway is at limits.max_connections; retry later"]);
      assert.ok(r.retry_ms >= RETRY_MS / 3 && r.retry_ms <= RETRY_MS * 5 / 3, l);
    }
    assert.ok(!log.includes("error 2"), log.join(" | ")); // never closed for good
    assert.equal(await page.evaluate(() => window.es.readyState), 1);
    await page.close();
  } finally {
    for (const f of fillers) f.req.destroy();
    assert.equal(await gw.stop(), 0);
  }
});

test("a draining gateway replaced on the same port: EventSource reconnects, reset, then every new event", async () => {
  const config = { sse: { retry_ms: RETRY_MS }, drain_window_ms: 1000 };
  let gw = await startGateway(config);
  const ports = { publicPort: gw.publicPort, controlPort: gw.controlPort };
  try {
    const page = await blankPage(browser, gw.publicUrl);
    await openEventSource(page, "sse?topic=roll");
    await waitFor("the stream to open", async () => (await pageLog(page)).includes("open"));
    const first = (await publish(gw, "roll", "one")).id;
    await waitFor("the first event", async () => (await pageLog(page)).includes(`${first} one`));

    assert.equal(await gw.stop(), 0); // drained over drain_window_ms, then gone
    await sleep(1000);                // the port is closed meanwhile: attempts fail
    gw = await startGateway(config, ports);
    await waitFor("the reset from the new process", async () => (await pageLog(page)).some((l) => l.startsWith("reset")), 10000);
    const want = [];
    for (const d of ["two", "three", "four"]) want.push(`${(await publish(gw, "roll", d)).id} ${d}`);
    await waitFor("three new events", async () => (await pageLog(page)).filter((l) => / (two|three|four)$/.test(l)).length >= 3);
    await sleep(300);
    const log = await pageLog(page);
    const epoch2 = want[0].split("@")[1].split(":")[0];
    assert.notEqual(first.split("@")[1].split(":")[0], epoch2);
    assert.deepEqual(log.filter((l) => !/^(open|error|refused)/.test(l)), [`${first} one`, `reset roll@${epoch2}:0`, ...want]);
    assert.ok(log.filter((l) => l === "error 0").length >= 2, log.join(" | ")); // it retried
    assert.ok(!log.includes("error 2"), log.join(" | "));
    assert.equal(await page.evaluate(() => window.es.readyState), 1);
    await page.close();
  } finally {
    assert.equal(await gw.stop(), 0);
  }
});

test("behind docs/deploy/nginx.conf: the gateway restarting, EventSource gets refused events (502), then reset and every new event", async () => {
  const config = { sse: { retry_ms: RETRY_MS } };
  let gw = await startGateway(config);
  const ports = { publicPort: gw.publicPort, controlPort: gw.controlPort };
  const port = await freePort();
  const nginx = await startNginx(deployConf({ port, gw, prefix: tempDir("deploy") }), port);
  try {
    const page = await blankPage(browser, `${nginx.url}live/`);
    await openEventSource(page, "sse?topic=deploy");
    await waitFor("the stream to open", async () => (await pageLog(page)).includes("open"));
    const first = (await publish(gw, "deploy", "one")).id;
    await waitFor("the first event", async () => (await pageLog(page)).includes(`${first} one`));

    assert.equal(await gw.stop(), 0);
    await waitFor("nginx's refusal", async () => (await pageLog(page)).some((l) => l.startsWith("refused")), 10000);
    const poll = await get(`${nginx.url}live/poll?topic=deploy&timeout=0`);
    assert.equal(poll.status, 502); // other paths keep nginx's status
    gw = await startGateway(config, ports);
    await waitFor("the reset from the new process", async () => (await pageLog(page)).some((l) => l.startsWith("reset")), 15000);
    const want = [];
    for (const d of ["two", "three"]) want.push(`${(await publish(gw, "deploy", d)).id} ${d}`);
    await waitFor("two new events", async () => (await pageLog(page)).filter((l) => / (two|three)$/.test(l)).length >= 2);
    await sleep(300);
    const log = await pageLog(page);
    const epoch2 = want[0].split("@")[1].split(":")[0];
    assert.deepEqual(log.filter((l) => !/^(open|error|refused)/.test(l)), [`${first} one`, `reset deploy@${epoch2}:0`, ...want]);
    for (const l of log.filter((l) => l.startsWith("refused"))) {
      const r = JSON.parse(l.slice(8));
      assert.deepEqual([r.status, r.error], [502, "unreachable"]);
      assert.ok(r.retry_ms >= 1000 && r.retry_ms <= 4900, l);
    }
    assert.ok(!log.includes("error 2"), log.join(" | "));
    assert.equal(await page.evaluate(() => window.es.readyState), 1);
    await page.close();
  } finally {
    await nginx.stop();
    assert.equal(await gw.stop(), 0);
  }
});

test("livegate.js on a full gateway: each refused event reported in onState and retried over SSE, then every event", async () => {
  const max = 3;
  const gw = await startGateway({ limits: { max_connections: max, keepalive_timeout_ms: 200 }, sse: { retry_ms: RETRY_MS } });
  const fillers = [];
  try {
    const page = await blankPage(browser, gw.publicUrl);
    await page.evaluate(() => import("./livegate.js")); // loaded before the gateway is full
    await waitFor("the page's connections to close", async () => (await stat(gw, "connections_open")) === 0);
    const since = (await publish(gw, "lib", "seen")).id;
    for (let i = 0; i < max; i++) fillers.push(await get(`${gw.publicUrl}sse?topic=filler`, { onData() {} }));
    await waitFor("the gateway to be full", async () => (await stat(gw, "connections_open")) === max);
    await startSubscription(page, "./livegate.js", ["lib"], { since, transports: ["sse"] });
    const refusal = "backoff:sse 503 unavailable: the gateway is at limits.max_connections; retry later";
    await waitRecord(page, "two refusals", (r) => r.states.filter((s) => s === refusal).length >= 2);
    const seq2 = (await publish(gw, "lib", "two")).seq;
    fillers.pop().req.destroy();
    await waitRecord(page, "the stream to open", (r) => r.states.includes("open:sse"));
    const seq3 = (await publish(gw, "lib", "three")).seq;
    const rec = await waitRecord(page, "two events", (r) => r.events.length >= 2);
    await sleep(300);
    assert.deepEqual((await record(page)).events, [
      { topic: "lib", seq: seq2, data: "two", event: "message", transport: "sse" },
      { topic: "lib", seq: seq3, data: "three", event: "message", transport: "sse" },
    ]);
    // (connecting shows the last error until the stream opens)
    assert.ok(rec.states.every((s) => s === refusal || s === "open:sse" || /^connecting:sse( 503 unavailable: .*)?$/.test(s)), rec.states.join(" | "));
    assert.deepEqual(page.errors, []);
    await page.close();
  } finally {
    for (const f of fillers) f.req.destroy();
    assert.equal(await gw.stop(), 0);
  }
});
