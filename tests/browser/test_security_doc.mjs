// test_security_doc.mjs - docs/security.md's "Worked example", run as it is written: its config
// (the origins mapped to loopback), its one-line token command, its curl commands, and its
// EventSource block in headless Chromium. The page is at http://app.example.com:PORT and the
// gateway at http://live.example.com:PORT (Chromium's host resolver maps both to 127.0.0.1; an
// http origin, so the cookie is not `Secure` here). The block's stream, whose token lives ~3 s,
// must show every event once and in order across the token's expiry: the stream ends with the
// `error` event the docs describe (code token_expired, a message, the cursor), and the block
// reconnects with a fresh token and last_event_id=<that cursor>. The cookie stream beside it
// gets the same events.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { startGateway, publish, waitFor, sleep, sourceDir, freePort, launchBrowser, mintToken } from "./lib.mjs";

const doc = readFileSync(path.join(sourceDir, "docs/security.md"), "utf8");
const section = doc.slice(doc.indexOf("### Worked example"), doc.indexOf("### Refusals"));
const shBlock = /```sh\n([\s\S]*?)```/.exec(section)[1];
const jsBlock = /```js\n([\s\S]*?)```/.exec(section)[1];
const config = JSON.parse(/<<'JSON'\n([\s\S]*?)\nJSON\n/.exec(shBlock)[1]);
const mintLine = shBlock.split("\n").find((l) => l.startsWith("TOKEN=$(scripts/mint_token.sh"));
// The shell lines after the token, backslash continuations joined: two streams, one publish.
const commands = shBlock.slice(shBlock.indexOf(mintLine) + mintLine.length).replace(/\\\n\s*/g, "")
  .split("\n").filter((l) => l.startsWith("curl "));

let gw, browser, port;
before(async () => {
  port = await freePort();
  const cfg = JSON.parse(JSON.stringify(config).replaceAll("https://app.example.com", `http://app.example.com:${port}`));
  gw = await startGateway(cfg, { publicPort: port });
  browser = await launchBrowser(["--host-resolver-rules=MAP app.example.com 127.0.0.1, MAP live.example.com 127.0.0.1"]);
});
after(async () => {
  if (browser) await browser.close();
  assert.equal(await gw.stop(), 0);
});

const onPorts = (cmd) => cmd.replaceAll("127.0.0.1:8080", `127.0.0.1:${gw.publicPort}`)
                            .replaceAll("127.0.0.1:8081", `127.0.0.1:${gw.controlPort}`);
const clientsOf = async (topic) => (await (await fetch(`${gw.controlUrl}v1/clients?topic=${topic}`,
  { headers: { authorization: `Bearer ${config.auth.control_token}` } })).json()).clients.length;

test("the docs' config, token command and curl commands: both streams print the published event", async () => {
  assert.deepEqual(config.allowed_origins, ["https://app.example.com"]);
  assert.equal(commands.length, 3, commands.join("\n"));
  const token = execFileSync("bash", ["-c", `${mintLine}\necho "$TOKEN"`], { cwd: sourceDir, encoding: "utf8" }).trim();
  assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
  const env = { ...process.env, TOKEN: token };
  const streams = commands.slice(0, 2).map((c) => {
    assert.match(c, /^curl -N /);
    const child = spawn("bash", ["-c", `${onPorts(c)} --max-time 4`], { env });
    child.out = "";
    child.stdout.on("data", (d) => { child.out += d; });
    child.done = new Promise((r) => child.on("exit", r));
    return child;
  });
  await waitFor("the two curl streams", async () => (await clientsOf("news/eu")) === 2);
  const published = execFileSync("bash", ["-c", onPorts(commands[2])], { env, encoding: "utf8" });
  assert.match(published, /"id":"news\/eu@[0-9a-f]{8}:1"/);
  for (const s of streams) {
    await s.done;
    assert.match(s.out, /(^|\n)id: news\/eu@[0-9a-f]{8}:1\ndata: \{"price":1\}\n\n/, s.out);
  }
});

test("the docs' EventSource block in Chromium: every event once, in order, across the token's expiry", async () => {
  const topic = "news/eu";
  const context = await browser.newContext();
  const cookieToken = mintToken(config.auth.hs256_secret, "news/*", 3600);
  await context.addCookies([{ name: config.auth.cookie || "livegate_token", value: cookieToken,
    domain: ".example.com", path: "/", httpOnly: true, sameSite: "Strict", secure: false }]);
  const page = await context.newPage();
  const errors = [], logs = [], tokens = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => logs.push(m.text()));
  // fetchToken(), which the block leaves to the page: the first token lives ~3 s, then 1 hour.
  await page.exposeFunction("lgFetchToken", () => {
    const t = mintToken(config.auth.hs256_secret, "news/*", tokens.length ? 3600 : 3);
    tokens.push(t);
    return t;
  });
  const res = await page.goto(`http://app.example.com:${gw.publicPort}/__test.html`);
  assert.equal(res.status(), 200);
  // The real EventSource, with every stream's URL, messages and error events recorded.
  const prelude = `
    const rec = (window.rec = { urls: [], messages: [], errors: [] });
    window.EventSource = class extends EventSource {
      constructor(url, opts) {
        super(url, opts);
        const i = rec.urls.push(String(url)) - 1;
        this.addEventListener("message", (e) => rec.messages.push([i, e.lastEventId, e.data]));
        this.addEventListener("error", (e) => rec.errors.push([i, e.data ?? null]));
      }
    };
    const fetchToken = () => window.lgFetchToken();
  `;
  const block = jsBlock.replaceAll("https://live.example.com", `http://live.example.com:${gw.publicPort}`);
  await page.addScriptTag({ type: "module", content: prelude + block });
  await waitFor("the block's two streams", async () => (await clientsOf(topic)) === 2).catch(async (e) => {
    throw new Error(`${e.message}; page errors ${errors}; console ${logs}; record ${JSON.stringify(await page.evaluate(() => window.rec))}`);
  });

  const N = 40; // one every 125 ms: 5 s, past the first token's exp
  const ids = [];
  for (let i = 1; i <= N; i++) { ids.push((await publish(gw, topic, JSON.stringify({ price: i }))).id); await sleep(125); }
  const lines = () => logs.filter((l) => l.startsWith(`${topic}@`));
  await waitFor(`${N} events logged by the block`, () => lines().length >= N, 8000);
  await sleep(300);
  const rec = await page.evaluate(() => window.rec);
  assert.deepEqual(errors, []);
  assert.deepEqual(lines(), ids.map((id, i) => `${id} {"price":${i + 1}}`));

  // Stream 0: the first token's, ended by the gateway's error event; stream 1: the cookie's;
  // stream 2: the block's reconnect with the second token from the cursor of the error event.
  assert.equal(rec.urls.length, 3, rec.urls.join("\n"));
  assert.equal(tokens.length, 2);
  const expired = rec.errors.filter(([i, data]) => i === 0 && data);
  assert.equal(expired.length, 1, JSON.stringify(rec.errors));
  const info = JSON.parse(expired[0][1]);
  assert.deepEqual(Object.keys(info).sort(), ["code", "cursor", "message"]);
  assert.equal(info.code, "token_expired");
  const first = rec.messages.filter(([i]) => i === 0);
  assert.ok(first.length >= 1 && first.length < N, `${first.length} events before the expiry`);
  assert.equal(info.cursor, first.at(-1)[1]);
  const again = new URL(rec.urls[2]);
  assert.equal(again.searchParams.get("access_token"), tokens[1]);
  assert.equal(again.searchParams.get("last_event_id"), info.cursor);
  assert.equal(new URL(rec.urls[0]).searchParams.get("access_token"), tokens[0]);
  const cookieStream = rec.messages.filter(([i]) => i === 1).map(([, , d]) => JSON.parse(d).price);
  assert.deepEqual(cookieStream, Array.from({ length: N }, (_, i) => i + 1));
  assert.deepEqual(rec.errors.filter(([i]) => i !== 0), []);
  await context.close();
});
