// test_auth.mjs - static/livegate.js's `token` and `getToken` options against a real gateway with
// authorization on (an HS256 secret; tokens minted by scripts/mint_token.sh, the renewals' the same
// way in-process), from Node, over WebSocket, SSE and long-poll: a token that covers the topic
// receives every event once, in order; a token for another topic, or an expired one, ends the
// subscription with the gateway's reason after one attempt (no reconnecting with a refused token);
// a token that expires mid-stream is renewed through getToken (over WebSocket with {"op":"refresh"}
// before exp, with no reconnect; over SSE and long-poll by reconnecting from the cursor) and
// nothing published meanwhile is lost or repeated; without getToken the expiry ends the
// subscription. The renewal runs in headless Chromium too (its WebSocket and fetch), served by the
// gateway.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { createHmac } from "node:crypto";
import { startGateway, publish, waitFor, sleep, sourceDir, mintToken, launchBrowser } from "./lib.mjs";
import { blankPage, record, waitRecord } from "./page.mjs";

const lib = await import(path.join(sourceDir, "static/livegate.js"));
const SECRET = "test-secret-of-32-bytes-for-hs256";
const open = []; // every subscription, closed at the end even when its test failed

// The token scripts/mint_token.sh mints (same claims, exp in whole seconds), made in-process
// for the renewals: livegate.js asks getToken a third of a 2 s token's life ahead of its exp,
// and the script's child processes, run synchronously, stall this event loop for longer than
// that on a loaded machine, so the refresh would reach the gateway after exp.
function renewToken(ttlS) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const claims = { exp: Math.floor(Date.now() / 1000) + ttlS, livegate: { subscribe: ["auth/*"], publish: [] } };
  const body = `${b64({ alg: "HS256", typ: "JWT" })}.${b64(claims)}`;
  return `${body}.${createHmac("sha256", SECRET).update(body).digest("base64url")}`;
}
let gw;
before(async () => {
  gw = await startGateway({ auth: { hs256_secret: SECRET, control_token: "ctl-token" } });
});
after(async () => {
  for (const s of open) s.close();
  assert.equal(await gw.stop(), 0);
});

const transports = ["websocket", "sse", "poll"].filter((t) => t !== "websocket" || globalThis.WebSocket);

async function stats() {
  return (await fetch(`${gw.controlUrl}v1/stats`, { headers: { authorization: "Bearer ctl-token" } })).json();
}

function watch(topic, transport, opts) {
  const got = { events: [], states: [], ends: [], tokens: 0 };
  const sub = lib.subscribe([topic], {
    baseUrl: gw.publicUrl, transports: [transport], pollTimeoutS: 2, minBackoffMs: 50, ...opts,
    onEvent: (e) => got.events.push(`${e.seq}=${e.data}@${e.transport}`),
    onState: (s) => got.states.push(`${s.state}:${s.transport}${s.error ? ":" + s.error : ""}`),
    onEnd: (e) => got.ends.push(e),
  });
  open.push(sub);
  return { sub, got };
}
const count = (states, prefix) => states.filter((s) => s.startsWith(prefix)).length;

for (const transport of transports) {
  test(`${transport}: a token covering the topic receives every event once, in order`, async () => {
    const topic = `auth/ok-${transport}`;
    const { sub, got } = watch(topic, transport, { token: mintToken(SECRET, "auth/*") });
    await waitFor("open", () => sub.state === "open");
    for (let i = 1; i <= 5; i++) await publish(gw, topic, `d${i}`);
    await waitFor("5 events", () => got.events.length === 5);
    await sleep(300);
    sub.close();
    assert.deepEqual(got.events, [1, 2, 3, 4, 5].map((i) => `${i}=d${i}@${transport}`));
    assert.equal(count(got.states, "connecting"), 1, got.states.join(" "));
  });

  for (const [name, token, code] of [
    ["a token for another topic", () => mintToken(SECRET, "other/*"), "forbidden"],
    ["an expired token", () => mintToken(SECRET, "auth/*", -10), "token_expired"],
    ["a token with a forged signature", () => mintToken("not-the-secret-of-the-gateway!!", "auth/*"), "token_bad_signature"],
    ["no token", () => undefined, "token_missing"],
  ]) {
    test(`${transport}: ${name} ends the subscription with ${code}, after one attempt`, async () => {
      const before = await stats();
      const { sub, got } = watch(`auth/refused-${transport}`, transport, { token: token() });
      await waitFor("onEnd", () => got.ends.length === 1);
      await sleep(500); // nothing reconnects after the end
      assert.equal(got.ends[0].reason, "error");
      assert.equal(got.ends[0].error.code, code, got.ends[0].error.message);
      assert.equal(sub.state, "closed");
      assert.equal(sub.error.code, code);
      assert.equal(count(got.states, "connecting"), 1, got.states.join(" "));
      assert.match(got.states.at(-1), /^closed:/);
      const key = code === "forbidden" ? "auth_refused_topic" : `auth_refused_${code.replace("token_", "")}`;
      assert.equal((await stats())[key], before[key] + 1, key);
    });
  }

  test(`${transport}: a token that expires mid-stream without getToken ends it with token_expired`, async () => {
    const topic = `auth/expires-${transport}`;
    const { sub, got } = watch(topic, transport, { token: mintToken(SECRET, "auth/*", 2) });
    await waitFor("open", () => sub.state === "open");
    await publish(gw, topic, "before");
    await waitFor("onEnd", () => got.ends.length === 1, 6000);
    await sleep(300);
    assert.deepEqual(got.events, [`1=before@${transport}`]);
    assert.equal(got.ends[0].error.code, "token_expired", got.ends[0].error.message);
    assert.equal(sub.state, "closed");
    // A poll's next request is the one refused; a stream opens once and is ended by the gateway.
    assert.equal(count(got.states, "open"), 1, got.states.join(" "));
  });

  test(`${transport}: a token that expires every 2 s is renewed by getToken and nothing is lost`, async () => {
    const topic = `auth/renew-${transport}`;
    const before = await stats();
    let closing = false;
    const { sub, got } = watch(topic, transport, {
      token: renewToken(2),
      getToken: async ({ transport: t }) => {
        assert.equal(t, transport);
        await sleep(20);
        // Counted as it is handed over: one asked for while the test closes is never sent.
        if (!closing) got.tokens++;
        return renewToken(2);
      },
    });
    await waitFor("open", () => sub.state === "open");
    const N = 50; // one every 120 ms: 6 s, three lifetimes of a token
    for (let i = 1; i <= N; i++) { await publish(gw, topic, `e${i}`); await sleep(120); }
    await waitFor(`${N} events`, () => got.events.length >= N, 6000);
    await sleep(500);
    // A renewal may be under way at this instant (getToken mints with a child process): the
    // subscription is alive if it is open again at once, and it never backed off or ended.
    await waitFor("open after the last renewal", () => sub.state === "open", 2000)
      .catch(() => assert.fail(`not open: ${got.states.join(" ")}`));
    assert.ok(!got.states.some((s) => s.startsWith("backoff")), got.states.join(" "));
    assert.deepEqual(got.ends, []);
    closing = true;
    sub.close();
    assert.deepEqual(got.events, Array.from({ length: N }, (_, i) => `${i + 1}=e${i + 1}@${transport}`));
    assert.ok(got.tokens >= 2, `getToken called ${got.tokens} times`);
    assert.deepEqual(got.ends.map((e) => e.reason), ["closed"]);
    if (transport === "websocket") // the last refresh may still be on its way to the worker
      await waitFor("every refresh counted", async () =>
        (await stats()).auth_refreshed - before.auth_refreshed >= got.tokens, 2000).catch(() => {});
    const after = await stats();
    if (transport === "websocket") {
      // Refreshed in-band before every exp: one connection throughout, never closed with 4003.
      assert.equal(count(got.states, "connecting"), 1, got.states.join(" "));
      assert.equal(after.auth_refreshed - before.auth_refreshed, got.tokens);
      assert.equal(after.auth_streams_expired, before.auth_streams_expired);
    } else {
      // Reconnected with a fresh token at each expiry (SSE: the gateway's error event; poll: a
      // 401 token_expired on the next poll), resuming from the cursor.
      assert.ok(count(got.states, "open") >= 2, got.states.join(" "));
      assert.ok(got.states.some((s) => /token_expired/.test(s)), got.states.join(" "));
    }
  });
}

test("a getToken that throws is retried after a backoff; one that gives nothing ends it", async () => {
  const transport = transports[0];
  let calls = 0;
  const { sub, got } = watch("auth/hook", transport, {
    getToken: async () => {
      if (++calls === 1) throw new Error("token service down");
      return calls === 2 ? mintToken(SECRET, "auth/*", 1) : "";
    },
  });
  await waitFor("open", () => sub.state === "open");
  assert.ok(got.states.some((s) => /^backoff:.*token service down/.test(s)), got.states.join(" "));
  await waitFor("onEnd", () => got.ends.length === 1, 6000);
  assert.equal(got.ends[0].error.code, "token_missing");
  assert.ok(calls >= 3, `getToken called ${calls} times`);
});

// The same in headless Chromium: the browser's own WebSocket (close 4003, the in-band refresh)
// and fetch-read SSE, with getToken asking the test (as a page would ask its backend).
for (const transport of ["websocket", "sse"]) {
  test(`Chromium, ${transport}: a 2 s token renewed by getToken, every event once, in order`, async () => {
    const browser = await launchBrowser();
    try {
      const page = await blankPage(browser, gw.publicUrl);
      let tokens = 0;
      await page.exposeFunction("lgFetchToken", () => { tokens++; return renewToken(2); });
      const topic = `auth/chromium-${transport}`;
      await page.evaluate(async ([topic, transport, token]) => {
        const { subscribe } = await import("/livegate.js");
        const rec = (window.rec = { events: [], states: [], ends: [] });
        window.sub = subscribe([topic], {
          transports: [transport], token, getToken: () => window.lgFetchToken(),
          onEvent: (e) => rec.events.push(`${e.seq}=${e.data}@${e.transport}`),
          onState: (s) => rec.states.push(`${s.state}:${s.transport}${s.error ? ":" + s.error : ""}`),
          onEnd: (e) => rec.ends.push(e),
        });
      }, [topic, transport, renewToken(2)]);
      await waitRecord(page, "open", (r) => r.states.includes(`open:${transport}`));
      // One every 125 ms, at least 5 s (two lifetimes of a token and more), and on until the
      // token was renewed twice: a token's lifetime is counted in whole seconds, and a loaded
      // machine stretches the renewals, so the count of events follows the renewals.
      let N = 0;
      while (N < 40 || (tokens < 2 && N < 160)) { N++; await publish(gw, topic, `e${N}`); await sleep(125); }
      const rec = await waitRecord(page, `${N} events`, (r) => r.events.length >= N, 6000);
      await sleep(300);
      assert.deepEqual(page.errors, []);
      assert.deepEqual((await record(page)).events, Array.from({ length: N }, (_, i) => `${i + 1}=e${i + 1}@${transport}`));
      assert.ok(tokens >= 2, `getToken called ${tokens} times`);
      assert.deepEqual(rec.ends, []);
      if (transport === "websocket") assert.equal(count(rec.states, "connecting"), 1, rec.states.join(" "));
      else assert.ok(count(rec.states, "open") >= 2, rec.states.join(" "));
      await page.evaluate(() => window.sub.close());
    } finally {
      await browser.close();
    }
  });
}
