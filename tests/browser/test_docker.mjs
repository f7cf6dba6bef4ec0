// test_docker.mjs - docker/ without a Docker engine (none runs on these machines): the
// Dockerfile and compose.yml pass their linters (dockerfilelint, dclint, from npm), and the
// Dockerfile's steps run outside Docker: its build stage's docker/build.sh (setup.sh, a Release
// build, the install tree, the runtime package list), then what the runtime stage relies on:
// those packages present, the installed binary started as an unprivileged user with the
// image's config, and the image's HEALTHCHECK command answering.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync, existsSync, chmodSync } from "node:fs";
import path from "node:path";
import { sourceDir, tempDir, freePort, waitFor, get } from "./lib.mjs";

const dockerfile = readFileSync(path.join(sourceDir, "docker/Dockerfile"), "utf8");
const bin = path.join(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), "node_modules/.bin");

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: "utf8", ...opts });
  return { code: r.status, out: (r.stdout || "") + (r.stderr || "") };
}

test("the Dockerfile and compose.yml pass their linters", () => {
  const df = run(path.join(bin, "dockerfilelint"), [path.join(sourceDir, "docker/Dockerfile")]);
  assert.equal(df.code, 0, df.out);
  assert.match(df.out, /Issues: None found/);
  const dc = run(path.join(bin, "dclint"), ["--max-warnings", "0", path.join(sourceDir, "docker/compose.yml")]);
  assert.equal(dc.code, 0, dc.out);
  assert.equal(dc.out.trim(), "");
  // What the files promise, beyond what the linters know.
  assert.match(dockerfile, /^FROM debian:12-slim AS build$/m);
  assert.match(dockerfile, /^FROM debian:12-slim$/m);
  assert.match(dockerfile, /^USER livegate$/m);
  assert.match(dockerfile, /^HEALTHCHECK .*\\\n\s+CMD curl -fsS http:\/\/127\.0\.0\.1:8081\/healthz/m);
  const compose = readFileSync(path.join(sourceDir, "docker/compose.yml"), "utf8");
  for (const s of ["livegate:", "nginx:", "redis:"]) assert.match(compose, new RegExp(`^  ${s}$`, "m"));
  assert.match(compose, /\.\.\/docs\/deploy\/nginx\.conf:\/etc\/nginx\/nginx\.conf:ro/);
  assert.ok(existsSync(path.join(sourceDir, "docs/deploy/nginx.conf")));
});

test("the Dockerfile's build and runtime steps, outside Docker", { timeout: 600000 }, async () => {
  // The build stage runs exactly docker/build.sh.
  const buildRun = /^FROM debian:12-slim AS build$[\s\S]*?^RUN (.*)$/m.exec(dockerfile);
  assert.equal(buildRun?.[1], "./docker/build.sh /tmp/build");
  const dest = path.join(tempDir("docker"), "opt-livegate");
  const buildDir = process.env.LG_DOCKER_BUILD_DIR || path.join(sourceDir, "build-docker");
  const out = execFileSync(path.join(sourceDir, "docker/build.sh"), [buildDir],
    { cwd: sourceDir, encoding: "utf8", env: { ...process.env, DESTDIR: dest } });
  console.log(out.trim());

  // The runtime stage installs runtime-packages.txt: every one is a Debian package that is
  // installed here, and together they leave no library of the binary unresolved (the libev
  // plugin libwebsockets loads with dlopen included, which ldd does not show).
  const packages = readFileSync(path.join(dest, "runtime-packages.txt"), "utf8").trim().split("\n");
  for (const p of ["libwebsockets17", "libwebsockets-evlib-ev", "libmicrohttpd12", "libjansson4", "libev4"]) assert.ok(packages.includes(p), packages.join(" "));
  for (const p of packages) {
    assert.equal(execFileSync("dpkg-query", ["-W", "-f=${Status}", p], { encoding: "utf8" }), "install ok installed", p);
  }
  assert.doesNotMatch(execFileSync("ldd", [path.join(dest, "bin/livegate")], { encoding: "utf8" }), /not found/);

  // The image's command line and config, as the unprivileged user nobody (the image's own
  // user is created by useradd at image build), on free ports.
  const cmd = JSON.parse(/^CMD (.*)$/m.exec(dockerfile)[1]);
  const entry = JSON.parse(/^ENTRYPOINT (.*)$/m.exec(dockerfile)[1]);
  assert.deepEqual([...entry, ...cmd], ["/opt/livegate/bin/livegate", "--config", "/opt/livegate/etc/livegate.json"]);
  const imageConfig = JSON.parse(readFileSync(path.join(dest, "etc/livegate.json"), "utf8"));
  assert.equal(imageConfig.static_dir, "/opt/livegate/static");
  const publicPort = await freePort(), controlPort = await freePort();
  const config = { ...imageConfig, static_dir: path.join(dest, "static"),
                   listen: { public: `127.0.0.1:${publicPort}`, control: `127.0.0.1:${controlPort}` } };
  const configFile = path.join(dest, "etc/test.json");
  writeFileSync(configFile, JSON.stringify(config));
  for (const p of [path.dirname(dest), dest, path.join(dest, "etc"), configFile]) chmodSync(p, 0o755);
  const check = run("setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", path.join(dest, "bin/livegate"),
                                "--config", configFile, "--check-config"]);
  assert.equal(check.code, 0, check.out);
  const { spawn } = await import("node:child_process");
  const gw = spawn("setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", path.join(dest, "bin/livegate"),
                               "--config", configFile], { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  gw.stderr.on("data", (d) => { log += d; });
  gw.stdout.on("data", (d) => { log += d; });
  try {
    await waitFor("the installed gateway", () => /listening public=/.test(log));
    const health = /^\s+CMD (curl .*) \|\| exit 1$/m.exec(dockerfile)[1].replace("127.0.0.1:8081", `127.0.0.1:${controlPort}`);
    const h = run("bash", ["-c", health]);
    assert.equal(h.code, 0, h.out);
    assert.equal(h.out, '{"status":"ok"}');
    const page = await get(`http://127.0.0.1:${publicPort}/`);
    assert.equal(page.status, 200);
    assert.match(page.body, /<title>livegate<\/title>/);
    assert.equal((await get(`http://127.0.0.1:${publicPort}/livegate.js`)).status, 200);
    const ps = execFileSync("ps", ["-o", "user=", "-p", String(gw.pid)], { encoding: "utf8" }).trim();
    assert.equal(ps, "nobody"); // setpriv exec'd livegate as that user
  } finally {
    gw.kill("SIGTERM");
    await new Promise((r) => gw.on("exit", r));
  }
  assert.match(log, /listening public=/);

  // The compose file's config, Redis store (`redis.url`) included, passes the strict check.
  const compose = run(path.join(dest, "bin/livegate"), ["--config", path.join(dest, "etc/livegate-compose.json"), "--check-config"]);
  assert.equal(compose.code, 0, compose.out);
});
