// test_nginx.mjs - docs/deploy/nginx.conf run by Debian's nginx in a private prefix in front of
// the real gateway: the first SSE event arrives while the stream is open, WebSocket upgrades
// (livegate.js in Chromium, loaded from /live/), a held poll outlives nginx's default 60 s
// proxy timeout, the page under /live/, and X-Forwarded-For honoured only from the proxy the
// gateway trusts (in its per-address count and in the address its disconnect line logs).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startGateway, startNginx, deployConf, launchBrowser, publish, freePort, tempDir, get, waitFor, sleep } from "./lib.mjs";
import { blankPage, startSubscription, waitRecord } from "./page.mjs";

// A poll held longer than nginx's default proxy_read_timeout (60 s): the deployed config must
// let it through (the gateway allows it here with poll.max_timeout_ms = 65 s).
const LONG_POLL_S = 65;
let gw, nginx, heldPoll, heldSince;

before(async () => {
  gw = await startGateway({ poll: { max_timeout_ms: LONG_POLL_S * 1000 } });
  const port = await freePort();
  nginx = await startNginx(deployConf({ port, gw, prefix: tempDir("deploy") }), port);
  const first = await get(`${nginx.url}live/poll?topic=held&timeout=0`);
  heldSince = JSON.parse(first.body).cursor;
  heldPoll = { started: Date.now(), answer: get(`${nginx.url}live/poll?topic=held&since=${heldSince}&timeout=${LONG_POLL_S}`) };
});
after(async () => {
  heldPoll?.answer.catch(() => {}); // when a name filter left its test out
  await nginx?.stop();
  if (gw) assert.equal(await gw.stop(), 0);
});

test("SSE through nginx: the first event arrives while the stream is open", async () => {
  let stream;
  const opened = await get(`${nginx.url}live/sse?topic=proxied`, {
    onData: (body) => { stream = body; },
  });
  assert.equal(opened.status, 200);
  assert.equal(opened.headers["content-type"], "text/event-stream");
  await waitFor("the stream's first id block", () => /id: proxied@[0-9a-f]{8}:0\n\n$/.test(stream ?? ""));
  const t0 = Date.now();
  const { id } = await publish(gw, "proxied", "first");
  await waitFor("the first event", () => stream.endsWith(`id: ${id}\ndata: first\n\n`), 2000, 5);
  const latency = Date.now() - t0;
  assert.ok(!opened.res.complete, "the stream is still open");
  console.log(`first event through nginx after ${latency} ms`);
  assert.ok(latency < 1000, `${latency} ms`);
  opened.req.destroy();
});

test("the page and livegate.js under /live/, over a WebSocket upgraded through nginx", async () => {
  const redirect = await get(`${nginx.url}live`);
  assert.equal(redirect.status, 301);
  assert.match(redirect.headers.location, /\/live\/$/);
  const page = await get(`${nginx.url}live/`);
  assert.equal(page.status, 200);
  assert.match(page.body, /<title>livegate<\/title>/);
  const lib = await get(`${nginx.url}live/livegate.js`);
  assert.equal(lib.status, 200);
  assert.equal(lib.headers["content-type"], "text/javascript; charset=utf-8");

  const browser = await launchBrowser();
  try {
    const p = await blankPage(browser, `${nginx.url}live/`);
    await startSubscription(p, "./livegate.js", ["mounted"], {});
    await waitRecord(p, "the WebSocket through nginx", (r) => r.states.includes("open:websocket"));
    for (const d of ["x", "y", "z"]) await publish(gw, "mounted", d);
    const rec = await waitRecord(p, "3 events", (r) => r.events.length >= 3);
    assert.deepEqual(rec.events.map((e) => `${e.seq}=${e.data}@${e.transport}`), ["1=x@websocket", "2=y@websocket", "3=z@websocket"]);
    assert.deepEqual(rec.states, ["connecting:websocket", "open:websocket"]);
    assert.deepEqual(p.errors, []);
  } finally {
    await browser.close();
  }
});

test("X-Forwarded-For counts only from a trusted proxy", async () => {
  // nginx connects to this gateway from 127.0.0.2, its only trusted proxy; one connection per
  // client address. Loopback clients of nginx use 127.0.0.x source addresses of their own.
  const gw2 = await startGateway({ trusted_proxies: "127.0.0.2", limits: { max_connections_per_address: 1 } });
  const port = await freePort();
  const nginx2 = await startNginx(deployConf({ port, gw: gw2, prefix: tempDir("xff"), extraHttp: "proxy_bind 127.0.0.2;" }), port);
  const open = [];
  const sse = async (from, headers = {}, direct = false) => {
    const base = direct ? gw2.publicUrl : `${nginx2.url}live/`;
    const r = await get(`${base}sse?topic=xff`, { localAddress: from, headers, onData: () => {} });
    open.push(r);
    await waitFor("the answer's body", () => r.body().length > 0);
    // An SSE refusal a retry may cure is a 200 `refused` event (docs/protocol.md, "Refusals")
    return r.headers["x-livegate-refused"] ?? (r.status === 200 ? 200 : `${r.status} ${JSON.parse(r.body()).error}`);
  };
  try {
    assert.equal(await sse("127.0.0.1"), 200);
    assert.equal(await sse("127.0.0.1"), "429 too_many_connections"); // the same client, counted by XFF
    assert.equal(await sse("127.0.0.3"), 200);                         // another client
    // A client that claims to be 127.0.0.3: nginx appends the real peer, the gateway takes it.
    assert.equal(await sse("127.0.0.5", { "X-Forwarded-For": "127.0.0.3" }), 200);
    assert.equal(await sse("127.0.0.5"), "429 too_many_connections");
    // Straight to the gateway from an address it does not trust: the header is ignored (a
    // loopback peer then counts against no address; were the header read, 127.0.0.3 is full).
    assert.equal(await sse("127.0.0.6", { "X-Forwarded-For": "127.0.0.3" }, true), 200);
    assert.equal(await sse("127.0.0.6", { "X-Forwarded-For": "127.0.0.3" }, true), 200);
    const stats = JSON.parse((await get(`${gw2.controlUrl}v1/stats`)).body);
    assert.equal(stats.connections_refused_address, 2);
    // The address the gateway logs for each stream when it closes (one line per 100 ms at most).
    for (const r of open.filter((r) => !r.headers["x-livegate-refused"])) {
      r.req.destroy();
      await sleep(150);
    }
    await waitFor("five disconnect lines", () => (gw2.child.output.match(/client disconnected/g) || []).length === 5);
    const remotes = [...gw2.child.output.matchAll(/client disconnected .*transport=SSE remote=(\S+) topics=xff/g)].map((m) => m[1]);
    assert.deepEqual(remotes, ["127.0.0.1", "127.0.0.3", "127.0.0.5", "127.0.0.6", "127.0.0.6"]);
  } finally {
    for (const r of open) r.req.destroy();
    await nginx2.stop();
    assert.equal(await gw2.stop(), 0);
  }
});

test(`a poll held ${LONG_POLL_S} s through nginx is answered, not cut (nginx's default timeout is 60 s)`, async () => {
  const { status, body } = await heldPoll.answer;
  const held = (Date.now() - heldPoll.started) / 1000;
  assert.equal(status, 200, body);
  assert.deepEqual(JSON.parse(body), { events: [], cursor: heldSince });
  console.log(`held poll answered after ${held.toFixed(1)} s`);
  assert.ok(held >= LONG_POLL_S - 0.5, `${held} s`);
});
