// test_deflate.mjs - permessage-deflate (websocket.compression) with two real clients:
// Debian's headless Chromium (its own WebSocket, which offers the extension by itself, and
// livegate.js over it) and Python's `websockets` (Debian's python3-websockets,
// ws_deflate_client.py). Each negotiates the extension (the page reads ws.extensions, Python
// the answer's header), sends its subscribe message compressed, and receives ~1 KB JSON events
// compressed and intact; the gateway compresses each event once for all of them.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { startGateway, launchBrowser, publish, waitFor, sourceDir } from "./lib.mjs";
import { blankPage, startSubscription, waitRecord } from "./page.mjs";

let browser, gw;
before(async () => {
  browser = await launchBrowser();
  gw = await startGateway({ workers: 2, websocket: { compression: { enabled: true } } });
});
after(async () => {
  await browser?.close();
  if (gw) assert.equal(await gw.stop(), 0);
});

const stats = async () => (await fetch(`${gw.controlUrl}v1/stats`)).json();
const wsUrl = () => `ws://127.0.0.1:${gw.publicPort}/ws`;

// A compressible event body of about 1 KB (JSON, as bench/ publishes).
const body = (n) => JSON.stringify({ n, items: Array.from({ length: 16 }, (_, i) =>
  ({ sku: `item-${String(i).padStart(4, "0")}`, price: 10 + i + 0.99, stock: 100 - i })) });

// Python's client: resolves with its output lines (JSON) once it exits 0.
function pythonClient(topic, count, offer = []) {
  const script = path.join(sourceDir, "tests/browser/ws_deflate_client.py");
  const child = spawn("/usr/bin/python3", [script, wsUrl(), topic, String(count), ...offer]);
  let out = "", err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const lines = () => out.split("\n").filter(Boolean).map((l) => JSON.parse(l));
  const done = new Promise((resolve, reject) => child.on("exit", (code) =>
    code === 0 ? resolve(lines()) : reject(new Error(`ws_deflate_client.py exited ${code}: ${err}`))));
  return { lines, done };
}

test("Chromium and Python negotiate it, send compressed, and get every event intact, compressed once", async () => {
  const topic = "deflate-fanout";
  const page = await blankPage(browser, gw.publicUrl);
  // Chromium's own WebSocket: the extension it negotiated, and every message as received.
  await page.evaluate(([url, topic]) => new Promise((resolve, reject) => {
    const ws = new WebSocket(url, "livegate.v1");
    window.raw = { extensions: null, messages: [] };
    ws.onopen = () => { window.raw.extensions = ws.extensions; ws.send(JSON.stringify({ op: "subscribe", topics: [topic] })); };
    ws.onmessage = (m) => { window.raw.messages.push(m.data); if (m.data.includes('"subscribed"')) resolve(); };
    ws.onerror = () => reject(new Error("the WebSocket failed"));
  }), [wsUrl(), topic]);
  // livegate.js over the same browser's WebSocket.
  await startSubscription(page, "./livegate.js", [topic], { baseUrl: gw.publicUrl, transports: ["websocket"] });
  await waitRecord(page, "livegate.js to open", (r) => r.states.includes("open:websocket"));
  const py = pythonClient(topic, 3);
  await waitFor("Python's subscription", () => py.lines().length === 1);
  const before = await stats();

  const sent = [];
  for (let n = 1; n <= 3; n++) { sent.push(body(n)); await publish(gw, topic, sent[n - 1]); }

  const raw = await (async () => {
    await waitFor("Chromium's 3 events", async () => (await page.evaluate(() => window.raw.messages.length)) === 4);
    return page.evaluate(() => window.raw);
  })();
  assert.equal(raw.extensions, "permessage-deflate");
  assert.deepEqual(raw.messages.slice(1).map((m) => JSON.parse(m).data), sent);
  const rec = await waitRecord(page, "livegate.js's 3 events", (r) => r.events.length === 3);
  assert.deepEqual(rec.events.map((e) => e.data), sent);
  const lines = await py.done;
  assert.deepEqual(lines[0], { extensions: "permessage-deflate", subscribed: "subscribed" });
  assert.deepEqual(lines.slice(1, 4).map((l) => l.data), sent);
  assert.deepEqual(lines[4], { pong: "pong" });
  assert.deepEqual(page.errors, []);

  const after = await stats();
  assert.ok(after.ws_deflate_negotiated >= 3, `negotiated ${after.ws_deflate_negotiated}`);
  assert.equal(after.ws_deflate_events - before.ws_deflate_events, 3, "each event compressed once");
  assert.equal(after.ws_deflate_frames - before.ws_deflate_frames, 9, "3 events x 3 connections");
  const ratio = (after.ws_deflate_bytes_before - before.ws_deflate_bytes_before) /
                (after.ws_deflate_bytes_after - before.ws_deflate_bytes_after);
  assert.ok(ratio > 3, `compression ratio ${ratio}`);
  await page.close();
});

test("Python's offers with parameters: echoed when acceptable, declined (served plain) when not", async () => {
  const cases = [
    [["server_no_context_takeover=1"], "permessage-deflate; server_no_context_takeover"],
    [["client_no_context_takeover=1"], "permessage-deflate; client_no_context_takeover"],
    [["server_max_window_bits=15"], "permessage-deflate; server_max_window_bits=15"],
    [["server_max_window_bits=10"], null], // below websocket.compression.max_window_bits
  ];
  for (const [i, [offer, answer]] of cases.entries()) {
    const topic = `deflate-offer-${i}`;
    const py = pythonClient(topic, 2, offer);
    await waitFor(`Python's subscription (${offer})`, () => py.lines().length === 1);
    const sent = [body(1), body(2)];
    for (const b of sent) await publish(gw, topic, b);
    const lines = await py.done;
    assert.deepEqual(lines[0], { extensions: answer, subscribed: "subscribed" }, String(offer));
    assert.deepEqual(lines.slice(1, 3).map((l) => l.data), sent, String(offer));
  }
});
