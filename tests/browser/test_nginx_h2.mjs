// test_nginx_h2.mjs - docs/deploy/nginx-h2.conf (TLS and HTTP/2) run by Debian's nginx in front
// of the real gateway, with a self-signed certificate made here by openssl: curl --http2 gets
// an SSE stream whose bytes are exactly the gateway's (the retry and id lines, then each event
// published), over HTTP/2; and eight streams multiplexed on one connection (more than the six
// HTTP/1.1 connections a browser opens to one host) each get the event.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { startGateway, startNginx, deployH2Conf, publish, freePort, tempDir, waitFor } from "./lib.mjs";

let gw, nginx, h2Url, certDir;
const curls = new Set();

before(async () => {
  gw = await startGateway();
  certDir = tempDir("tls");
  const cert = path.join(certDir, "cert.pem"), key = path.join(certDir, "key.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                           "-nodes", "-subj", "/CN=localhost", "-days", "1", "-keyout", key, "-out", cert],
               { stdio: "ignore" });
  const port = await freePort(), h2Port = await freePort();
  nginx = await startNginx(deployH2Conf({ port, h2Port, gw, prefix: tempDir("h2"), cert, key }), port);
  h2Url = `https://127.0.0.1:${h2Port}/`;
});
after(async () => {
  for (const c of curls) c.kill();
  await nginx?.stop();
  if (gw) assert.equal(await gw.stop(), 0);
});

// curl --http2 -k on urls (each to its own output file in dir), streaming, verbose: its
// stderr says how many connections it made and each response's status line.
function curl(urls, dir) {
  const args = ["--http2", "-k", "-v", "--no-progress-meter", "-N", "--parallel",
                "--parallel-max", "16"];
  urls.forEach((u, i) => args.push("-o", path.join(dir, `out${i}`), u));
  const child = spawn("curl", args, { stdio: ["ignore", "pipe", "pipe"] });
  child.output = "";
  child.stdout.on("data", (d) => { child.output += d; });
  child.stderr.on("data", (d) => { child.output += d; });
  child.exited = new Promise((r) => child.on("exit", () => { curls.delete(child); r(); }));
  curls.add(child);
  return child;
}
const count = (text, re) => (text.match(re) || []).length;
const body = (dir, i) => { try { return readFileSync(path.join(dir, `out${i}`), "utf8"); } catch { return ""; } };

test("SSE over HTTP/2 through nginx: exactly the gateway's bytes, event by event", async () => {
  const dir = tempDir("h2sse");
  const c = curl([`${h2Url}live/sse?topic=h2`], dir);
  await waitFor("the stream's first id block", () => /^retry: 3000\n\nid: h2@[0-9a-f]{8}:0\n\n$/.test(body(dir, 0)));
  const start = body(dir, 0);
  const a = await publish(gw, "h2", "first");
  await waitFor("the first event", () => body(dir, 0).endsWith("data: first\n\n"));
  assert.equal(body(dir, 0), `${start}id: ${a.id}\ndata: first\n\n`);
  const b = await publish(gw, "h2", "line1\nline2");
  await waitFor("the second event", () => body(dir, 0).endsWith("data: line2\n\n"));
  assert.equal(body(dir, 0), `${start}id: ${a.id}\ndata: first\n\n` +
                             `id: ${b.id}\ndata: line1\ndata: line2\n\n`);
  c.kill("SIGINT");
  await c.exited;
  assert.equal(count(c.output, /^< HTTP\/2 200 *\r?$/gm), 1, c.output);
});

test("eight SSE streams multiplexed on one HTTP/2 connection each get the event", async () => {
  const dir = tempDir("h2many");
  const n = 8;
  const c = curl(Array.from({ length: n }, (_, i) => `${h2Url}live/sse?topic=many&s=${i}`), dir);
  await waitFor("eight open streams", () => Array.from({ length: n }, (_, i) => body(dir, i)).every((b) => b.endsWith(":0\n\n")));
  const { id } = await publish(gw, "many", "all");
  await waitFor("the event on every stream", () => Array.from({ length: n }, (_, i) => body(dir, i)).every((b) => b.endsWith(`id: ${id}\ndata: all\n\n`)));
  for (let i = 0; i < n; i++) assert.match(body(dir, i), new RegExp(`^retry: 3000\\n\\nid: many@[0-9a-f]{8}:0\\n\\nid: ${id}\\ndata: all\\n\\n$`));
  c.kill("SIGINT");
  await c.exited;
  // Eight HTTP/2 responses on one TLS connection: one connect, seven reuses of it.
  assert.equal(count(c.output, /^< HTTP\/2 200 *\r?$/gm), n, c.output);
  assert.equal(count(c.output, /^\* Connected to /gm), 1, c.output);
});
