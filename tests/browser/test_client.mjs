// test_client.mjs - static/livegate.js in Debian's headless Chromium against the real gateway:
// WebSocket delivery, the fallback to SSE when a proxy refuses upgrades and to long-poll when
// a proxy buffers the stream (Debian's nginx in both cases), and a browser EventSource that
// resumes with Last-Event-ID across a gateway restart and shows `reset`.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, startNginx, launchBrowser, publish, freePort, tempDir, sleep, waitFor } from "./lib.mjs";
import { blankPage, startSubscription, record, waitRecord } from "./page.mjs";

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

const texts = (rec) => rec.events.map((e) => `${e.topic}/${e.seq}=${e.data}`);

test("over WebSocket: every event of two topics once, in order, with the subscribed cursor", async () => {
  const gw = await startGateway();
  try {
    const page = await blankPage(browser, gw.publicUrl);
    await publish(gw, "ws-a", "before"); // before the subscription: not delivered (no since)
    await startSubscription(page, "./livegate.js", ["ws-a", "ws-b"], {});
    await waitRecord(page, "the WebSocket to open", (r) => r.states.includes("open:websocket"));
    const want = [];
    for (let i = 1; i <= 5; i++) {
      await publish(gw, "ws-a", `a${i}`);
      await publish(gw, "ws-b", `b${i}`);
      want.push(`ws-a/${i + 1}=a${i}`, `ws-b/${i}=b${i}`);
    }
    const rec = await waitRecord(page, "10 events", (r) => r.events.length >= 10);
    await sleep(200); // nothing more may follow
    assert.deepEqual(texts(await record(page)), want);
    assert.ok(rec.events.every((e) => e.transport === "websocket"));
    assert.deepEqual(rec.states, ["connecting:websocket", "open:websocket"]);
    const epoch = (await publish(gw, "ws-a", "x")).id.split("@")[1].split(":")[0];
    await waitRecord(page, "the 11th event", (r) => r.events.length === 11);
    assert.equal(await page.evaluate(() => window.sub.cursor()), `ws-a@${epoch}:7,ws-b@${epoch}:5`);
    assert.deepEqual(page.errors, []);
    await page.close();
  } finally {
    assert.equal(await gw.stop(), 0);
  }
});

// A proxy that refuses WebSocket upgrades and, when `buffered`, buffers the SSE stream
// (proxy_buffering on, and the gateway's X-Accel-Buffering: no ignored): what the client must
// survive. Everything else is passed through as docs/deploy/nginx.conf does.
function hostileConf(port, gw, prefix, buffered) {
  const pass = `proxy_pass http://127.0.0.1:${gw.publicPort}; proxy_http_version 1.1; proxy_read_timeout 75s;`;
  return `events { worker_connections 64; }
http {
  client_body_temp_path ${prefix}/body; proxy_temp_path ${prefix}/proxy; fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi; scgi_temp_path ${prefix}/scgi; access_log off;
  server {
    listen 127.0.0.1:${port};
    location /ws { return 403; }
    location /sse { ${pass} ${buffered ? "proxy_buffering on; proxy_ignore_headers X-Accel-Buffering;" : "proxy_buffering off;"} }
    location / { ${pass} proxy_buffering off; }
  }
}
`;
}

test("WebSocket refused by the proxy: SSE; SSE buffered by the proxy: long-poll; every event once, in order", async () => {
  const gw = await startGateway({ sse: { heartbeat_ms: 1000, retry_ms: 200 } });
  const port = await freePort();
  const prefix = tempDir("hostile");
  let nginx = await startNginx(hostileConf(port, gw, prefix, false), port);
  try {
    const page = await blankPage(browser, nginx.url);
    await startSubscription(page, "./livegate.js", ["fb"], { heartbeatMs: 1000, maxBackoffMs: 500, pollTimeoutS: 5 });
    let rec = await waitRecord(page, "SSE to open after the refused upgrade", (r) => r.states.includes("open:sse"));
    assert.deepEqual(rec.states.slice(0, 2), ["connecting:websocket", "backoff:sse WebSocket closed (1006)"]);
    for (let i = 1; i <= 3; i++) await publish(gw, "fb", `e${i}`);
    rec = await waitRecord(page, "3 events over SSE", (r) => r.events.length >= 3);
    assert.deepEqual(rec.events.map((e) => e.transport), ["sse", "sse", "sse"]);

    // The same address, now buffering SSE: the stream drops, SSE (which worked) reopens,
    // stays silent past the heartbeat while a poll sees events, and the client moves on.
    await nginx.stop();
    nginx = await startNginx(hostileConf(port, gw, prefix, true), port);
    for (let i = 4; i <= 6; i++) await publish(gw, "fb", `e${i}`);
    rec = await waitRecord(page, "long-poll to open", (r) => r.states.includes("open:poll"));
    rec = await waitRecord(page, "6 events", (r) => r.events.length >= 6);
    for (let i = 7; i <= 9; i++) await publish(gw, "fb", `e${i}`);
    rec = await waitRecord(page, "9 events", (r) => r.events.length >= 9);
    await sleep(300);
    rec = await record(page);
    assert.deepEqual(texts(rec), [1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => `fb/${i}=e${i}`));
    assert.deepEqual(rec.events.map((e) => e.transport), ["sse", "sse", "sse", "poll", "poll", "poll", "poll", "poll", "poll"]);
    assert.ok(rec.states.some((s) => s.includes("buffering proxy")), rec.states.join(" | "));
    assert.equal(rec.states.at(-1), "open:poll");
    assert.deepEqual(rec.gaps, []);
    assert.deepEqual(rec.resets, []);
    assert.deepEqual(page.errors, []);
    await page.close();
  } finally {
    await nginx.stop();
    assert.equal(await gw.stop(), 0);
  }
});

test("EventSource resumes with Last-Event-ID after a gateway restart: reset, then every new event once", async () => {
  const config = { sse: { retry_ms: 200, heartbeat_ms: 15000 } };
  let gw = await startGateway(config);
  const ports = { publicPort: gw.publicPort, controlPort: gw.controlPort };
  try {
    const page = await blankPage(browser, gw.publicUrl);
    // The headers of the requests that reached a gateway: one the browser tried while no gateway
    // listened was refused before it sent anything, and Chromium reports only its provisional
    // headers (never Last-Event-ID).
    const sent = [];
    page.on("response", (r) => { if (r.url().includes("/sse?")) sent.push(r.request().allHeaders()); });
    await page.evaluate(() => {
      window.shown = [];
      const es = new EventSource("sse?topic=rs");
      es.onmessage = (e) => window.shown.push(`${e.lastEventId} ${e.data}`);
      es.addEventListener("reset", (e) => window.shown.push(`reset ${e.lastEventId} ${e.data}`));
      es.onopen = () => window.shown.push("open");
    });
    await waitFor("the stream to open", () => page.evaluate(() => window.shown.includes("open")));
    const first = [await publish(gw, "rs", "one"), await publish(gw, "rs", "two")];
    const e1 = first[0].id.split("@")[1].split(":")[0];
    await waitFor("two events", () => page.evaluate(() => window.shown.length === 3));

    assert.equal(await gw.stop(), 0);
    gw = await startGateway(config, ports);
    await waitFor("the reset", () => page.evaluate(() => window.shown.some((s) => s.startsWith("reset"))), 10000);
    const later = [];
    for (const d of ["three", "four", "five"]) later.push(await publish(gw, "rs", d));
    const e2 = later[0].id.split("@")[1].split(":")[0];
    assert.notEqual(e1, e2);
    await waitFor("three new events", () => page.evaluate(() => window.shown.length >= 8));
    await sleep(300);
    assert.deepEqual(await page.evaluate(() => window.shown), [
      "open", `rs@${e1}:1 one`, `rs@${e1}:2 two`, "open",
      `reset rs@${e2}:0 {"topic":"rs","epoch":"${e2}","id":"rs@${e2}:0"}`,
      `rs@${e2}:1 three`, `rs@${e2}:2 four`, `rs@${e2}:3 five`,
    ]);
    const lastEventIds = (await Promise.all(sent)).map((h) => h["last-event-id"] ?? null);
    assert.deepEqual(lastEventIds.slice(0, 1), [null]);
    assert.ok(lastEventIds.length >= 2);
    assert.ok(lastEventIds.slice(1).every((id) => id === `rs@${e1}:2`), JSON.stringify(lastEventIds));
    await page.close();
  } finally {
    assert.equal(await gw.stop(), 0);
  }
});
