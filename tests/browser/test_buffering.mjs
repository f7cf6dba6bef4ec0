// test_buffering.mjs - livegate.js in Debian's headless Chromium behind an nginx that refuses
// WebSocket and buffers SSE (proxy_buffering on, the gateway's X-Accel-Buffering: no ignored,
// as some proxies and CDNs do): a subscription with a cursor and a fresh one (no cursor) both
// end on long-poll within a bound, and every event published from the moment the gateway
// holds the SSE subscription arrives exactly once, in order.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, startNginx, launchBrowser, publish, freePort, tempDir, sleep, waitFor } from "./lib.mjs";
import { blankPage, startSubscription, record, waitRecord } from "./page.mjs";

const HEARTBEAT_MS = 1000;
// The stream is judged silent after 1.5 heartbeats, then probed every heartbeat / 4: long-poll
// must be open well within 4 heartbeats of the SSE request (plus a second of slack for CI).
const SWITCH_BOUND_MS = 4 * HEARTBEAT_MS + 1000;

let browser, gw, nginx;
before(async () => {
  browser = await launchBrowser();
  gw = await startGateway({ sse: { heartbeat_ms: HEARTBEAT_MS, retry_ms: 200 } });
  const port = await freePort(), prefix = tempDir("buffering");
  const pass = `proxy_pass http://127.0.0.1:${gw.publicPort}; proxy_http_version 1.1; proxy_read_timeout 75s;`;
  nginx = await startNginx(`events { worker_connections 64; }
http {
  client_body_temp_path ${prefix}/body; proxy_temp_path ${prefix}/proxy; fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi; scgi_temp_path ${prefix}/scgi; access_log off;
  server {
    listen 127.0.0.1:${port};
    location /ws { return 403; }
    location /sse { ${pass} proxy_buffering on; proxy_ignore_headers X-Accel-Buffering; }
    location / { ${pass} proxy_buffering off; }
  }
}
`, port);
});
after(async () => {
  await browser?.close();
  await nginx?.stop();
  if (gw) assert.equal(await gw.stop(), 0);
});

const texts = (rec) => rec.events.map((e) => `${e.topic}/${e.seq}=${e.data}`);
const stat = async (name) => (await (await fetch(`${gw.controlUrl}v1/stats`)).json())[name];

// Subscribes to topic through the proxy (opts.since: a cursor, after which `want` were
// published), publishes three events once the gateway holds the (buffered) SSE subscription
// and three once long-poll is open, and checks they all arrive once, in order, over long-poll,
// within the bound.
async function throughBufferingProxy(topic, opts, want) {
  const page = await blankPage(browser, nginx.url);
  await startSubscription(page, "./livegate.js", [topic], { heartbeatMs: HEARTBEAT_MS, maxBackoffMs: 300, pollTimeoutS: 5, ...opts });
  await waitFor("the gateway to hold the SSE subscription", async () => (await stat("clients_sse")) === 1);
  const sseAt = Date.now();
  for (let i = 1; i <= 3; i++) want.push(`${topic}/${(await publish(gw, topic, `held${i}`)).seq}=held${i}`);
  let rec = await waitRecord(page, "long-poll to open", (r) => r.states.includes("open:poll"), SWITCH_BOUND_MS + 2000);
  const tookMs = Date.now() - sseAt;
  assert.ok(tookMs < SWITCH_BOUND_MS, `long-poll opened ${tookMs} ms after the SSE subscription`);
  for (let i = 1; i <= 3; i++) want.push(`${topic}/${(await publish(gw, topic, `live${i}`)).seq}=live${i}`);
  rec = await waitRecord(page, `${want.length} events`, (r) => r.events.length >= want.length);
  await sleep(300); // nothing more may follow
  rec = await record(page);
  assert.deepEqual(texts(rec), want);
  assert.ok(rec.events.every((e) => e.transport === "poll"), JSON.stringify(rec.events));
  assert.ok(rec.states.some((s) => s.includes("buffering proxy")), rec.states.join(" | "));
  assert.ok(!rec.states.includes("open:sse"), rec.states.join(" | ")); // the stream never began
  assert.equal(rec.states.at(-1), "open:poll");
  assert.deepEqual([rec.gaps, rec.resets, rec.ends], [[], [], []]);
  assert.deepEqual(page.errors, []);
  await page.close();
  await waitFor("the SSE subscription to end", async () => (await stat("clients_sse")) === 0);
}

test("a fresh subscription (no cursor) leaves the buffered stream for long-poll, nothing lost", async () => {
  await publish(gw, "fresh", "before"); // before the subscription: never delivered
  await throughBufferingProxy("fresh", {}, []);
});

test("a subscription with a cursor leaves the buffered stream for long-poll, nothing lost", async () => {
  const since = (await publish(gw, "cursored", "seen")).id; // the client has seen it
  await publish(gw, "cursored", "missed");                  // published while it was away
  await throughBufferingProxy("cursored", { since }, ["cursored/2=missed"]);
});
