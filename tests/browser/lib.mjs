// lib.mjs - what the browser, nginx and cookbook tests share: a real build/livegate started on
// loopback with a config of the test's own, Debian's nginx with a private prefix, Debian's
// headless Chromium through playwright-core, and small HTTP helpers.
//
// Every process started here is stopped by the `stop` it returns (or at exit); every wait has
// a deadline; every port is a free loopback port chosen by the kernel.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync, rmSync, cpSync } from "node:fs";
import { tmpdir } from "node:os";
import net from "node:net";
import http from "node:http";
import path from "node:path";

export const sourceDir = process.env.LG_SOURCE_DIR || path.resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../..");
export const binary = process.env.LG_BINARY || path.join(sourceDir, "build/livegate");
const started = new Set();
process.on("exit", () => { for (const p of started) try { p.kill("SIGKILL"); } catch {} });

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function tempDir(name) {
  return mkdtempSync(path.join(tmpdir(), `lg-${name}-`));
}

export function freePort(host = "127.0.0.1") {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, host, () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

export async function waitFor(what, fn, timeoutMs = 10000, everyMs = 50) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try { const v = await fn(); if (v) return v; } catch (e) { last = e; }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ": " + last.message : ""}`);
    await sleep(everyMs);
  }
}

function run(cmd, args, opts = {}) {
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], ...opts });
  started.add(child);
  child.output = "";
  child.stdout.on("data", (d) => { child.output += d; });
  child.stderr.on("data", (d) => { child.output += d; });
  child.exited = new Promise((r) => child.on("exit", (code, signal) => { started.delete(child); r({ code, signal }); }));
  return child;
}

// Starts build/livegate with `config` (merged over a test default) on the given or free ports.
export async function startGateway(config = {}, ports = {}) {
  const dir = tempDir("gw");
  const publicPort = ports.publicPort || (await freePort());
  const controlPort = ports.controlPort || (await freePort());
  // The gateway serves a copy of static/ with a blank test page beside it (a page the test
  // fulfilled itself would have no address, and Chromium's local network checks would then
  // refuse its WebSocket to loopback).
  const staticDir = path.join(dir, "static");
  cpSync(path.join(sourceDir, "static"), staticDir, { recursive: true });
  writeFileSync(path.join(staticDir, "__test.html"), "<!doctype html><meta charset=utf-8><title>test</title>\n");
  const cfg = { workers: 1, static_dir: staticDir, ...config,
                listen: { public: `127.0.0.1:${publicPort}`, control: `127.0.0.1:${controlPort}` } };
  writeFileSync(path.join(dir, "livegate.json"), JSON.stringify(cfg));
  const child = run(binary, ["--config", path.join(dir, "livegate.json")]);
  await waitFor("the gateway's startup line", () => {
    if (child.exitCode !== null) throw new Error(`livegate exited: ${child.output}`);
    return /listening public=/.test(child.output);
  });
  const gw = {
    publicPort, controlPort, child, controlToken: config.auth && config.auth.control_token,
    publicUrl: `http://127.0.0.1:${publicPort}/`,
    controlUrl: `http://127.0.0.1:${controlPort}/`,
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      const { code } = await child.exited;
      rmSync(dir, { recursive: true, force: true });
      return code;
    },
  };
  return gw;
}

export async function publish(gw, topic, data, type) {
  const q = type ? `?type=${encodeURIComponent(type)}` : "";
  const headers = gw.controlToken ? { authorization: `Bearer ${gw.controlToken}` } : {};
  const res = await fetch(`${gw.controlUrl}v1/topics/${encodeURIComponent(topic)}/events${q}`, { method: "POST", body: data, headers });
  if (res.status !== 201) throw new Error(`publish answered ${res.status}: ${await res.text()}`);
  return res.json();
}

// A token minted by scripts/mint_token.sh (HS256 with `secret`; openssl underneath), valid
// ttlS seconds from now (negative: already expired), subscribing to the globs `subscribe`.
export function mintToken(secret, subscribe, ttlS = 3600) {
  return execFileSync(path.join(sourceDir, "scripts/mint_token.sh"),
                      ["-s", secret, "-S", subscribe, "-t", String(ttlS)], { encoding: "utf8" }).trim();
}

// Starts Debian's nginx with `conf` (a whole nginx.conf) in a private prefix.
export async function startNginx(conf, port) {
  const prefix = tempDir("nginx");
  writeFileSync(path.join(prefix, "nginx.conf"), conf);
  const nginx = process.env.LG_NGINX || "/usr/sbin/nginx";
  const globals = `pid ${prefix}/nginx.pid; error_log ${prefix}/error.log info; daemon off; master_process off;`;
  const test = run(nginx, ["-t", "-p", prefix, "-c", path.join(prefix, "nginx.conf"), "-g", globals]);
  const t = await test.exited;
  if (t.code !== 0) throw new Error(`nginx -t failed: ${test.output}`);
  const child = run(nginx, ["-p", prefix, "-c", path.join(prefix, "nginx.conf"), "-g", globals]);
  await waitFor("nginx to listen", () => {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${child.output}${readFileSync(path.join(prefix, "error.log"), "utf8")}`);
    return new Promise((r) => { const s = net.connect(port, "127.0.0.1", () => { s.destroy(); r(true); }); s.on("error", () => r(false)); });
  });
  return {
    url: `http://127.0.0.1:${port}/`, prefix, child,
    log: () => readFileSync(path.join(prefix, "error.log"), "utf8"),
    async stop() {
      if (child.exitCode === null) child.kill("SIGQUIT");
      await child.exited;
      rmSync(prefix, { recursive: true, force: true });
    },
  };
}

// docs/deploy/nginx.conf made to run in a private prefix: its listen port and upstream
// addresses replaced, temp paths in the prefix, plus the http-level directives a test adds.
export function deployConf({ port, gw, prefix = "", extraHttp = "" }) {
  let conf = readFileSync(path.join(sourceDir, "docs/deploy/nginx.conf"), "utf8");
  conf = conf.replace(/listen 80;/g, `listen 127.0.0.1:${port};`)
             .replace(/127\.0\.0\.1:8080/g, `127.0.0.1:${gw.publicPort}`)
             .replace(/127\.0\.0\.1:8081/g, `127.0.0.1:${gw.controlPort}`);
  const temps = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
    .map((t) => `${t}_temp_path ${prefix || "/tmp"}/${t === "client_body" ? "body" : t};`).join(" ");
  return conf.replace(/http \{/, `http { ${temps} access_log off; ${extraHttp}`);
}

// deployConf() with docs/deploy/nginx-h2.conf's server block added to its http block: TLS and
// HTTP/2 on h2Port with the certificate and key files given (the port-80 server stays on port).
export function deployH2Conf({ port, h2Port, gw, prefix, cert, key }) {
  const block = readFileSync(path.join(sourceDir, "docs/deploy/nginx-h2.conf"), "utf8")
    .replace(/listen 443 ssl http2;/, `listen 127.0.0.1:${h2Port} ssl http2;`)
    .replace(/\/etc\/livegate\/tls\/fullchain\.pem/, cert)
    .replace(/\/etc\/livegate\/tls\/privkey\.pem/, key);
  const conf = deployConf({ port, gw, prefix });
  const end = conf.lastIndexOf("}"); // the http block's
  return `${conf.slice(0, end)}${block}\n}\n`;
}

// Headless Debian Chromium through playwright-core.
// extraArgs: more Chromium switches (test_security_doc maps host names to loopback with them).
export async function launchBrowser(extraArgs = []) {
  const { chromium } = await import("playwright-core");
  return chromium.launch({
    executablePath: process.env.LG_CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", ...extraArgs],
  });
}

// One HTTP GET with the node:http client (a chosen source address, raw headers, streaming).
export function get(url, { headers = {}, localAddress, onData } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, localAddress, agent: false }, (res) => {
      res.setEncoding("utf8");
      let body = "";
      res.on("data", (d) => { body += d; onData && onData(body, res, req); });
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body }));
      res.on("error", reject);
      if (onData) resolve({ status: res.statusCode, headers: res.headers, res, req, body: () => body });
    });
    req.on("error", reject);
  });
}
