// test_docker.mjs - docker/ as files: the Dockerfiles and compose.yml pass their linters
// (dockerfilelint, dclint, from npm, with no warning allowed) and say what docker/README.md
// promises. The images themselves are built and run with podman by tests/deploy/test_image.sh
// (scripts/test.sh runs it where podman runs), which reads the same files.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, existsSync } from "node:fs";
import path from "node:path";
import { sourceDir } from "./lib.mjs";

const bin = path.join(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), "node_modules/.bin");
const read = (f) => readFileSync(path.join(sourceDir, f), "utf8");

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  return { code: r.status, out: (r.stdout || "") + (r.stderr || "") };
}

test("the Dockerfiles and compose.yml pass their linters", () => {
  for (const f of ["docker/Dockerfile", "docker/services.Dockerfile"]) {
    const df = run(path.join(bin, "dockerfilelint"), [path.join(sourceDir, f)]);
    assert.equal(df.code, 0, df.out);
    assert.match(df.out, /Issues: None found/);
  }
  const dc = run(path.join(bin, "dclint"), ["--max-warnings", "0", path.join(sourceDir, "docker/compose.yml")]);
  assert.equal(dc.code, 0, dc.out);
  assert.equal(dc.out.trim(), "");
});

test("what the files promise", () => {
  const dockerfile = read("docker/Dockerfile");
  // Every stage on the Debian 12 base that docker/base.sh makes from the Debian archive.
  assert.match(dockerfile, /^ARG BASE=localhost\/debian$/m);
  assert.match(dockerfile, /^FROM \$\{BASE\}:12 AS build$/m);
  assert.match(dockerfile, /^FROM \$\{BASE\}:12$/m);
  assert.match(read("docker/services.Dockerfile"), /^FROM \$\{BASE\}:12 AS redis$[\s\S]*^FROM \$\{BASE\}:12 AS nginx$/m);
  assert.match(read("docker/base.sh"), /^image=\$\{1:-localhost\/debian:12\}$/m);
  // The build stage makes the Debian package; the runtime stage installs it with apt.
  assert.match(dockerfile, /^RUN \.\/scripts\/setup\.sh --package$/m);
  assert.match(dockerfile, /^RUN \.\/docker\/build\.sh \/tmp\/livegate\.deb$/m);
  assert.match(dockerfile, /apt-get install -y --no-install-recommends curl \/tmp\/livegate\.deb/);
  assert.match(dockerfile, /^USER livegate$/m);
  assert.match(dockerfile, /^HEALTHCHECK .*\\\n\s+CMD curl -fsS http:\/\/127\.0\.0\.1:8081\/healthz/m);
  assert.deepEqual(JSON.parse(/^ENTRYPOINT (.*)$/m.exec(dockerfile)[1]), ["/usr/bin/livegate"]);
  assert.deepEqual(JSON.parse(/^CMD (.*)$/m.exec(dockerfile)[1]), ["--config", "/etc/livegate/livegate.json"]);

  // compose: three services in the gateway's network namespace, nginx with the tested config,
  // the gateway on Redis at the namespace's loopback.
  const compose = read("docker/compose.yml");
  for (const s of ["livegate:", "nginx:", "redis:"]) assert.match(compose, new RegExp(`^  ${s}$`, "m"));
  assert.equal(compose.match(/^    network_mode: "service:livegate"$/gm)?.length, 2);
  assert.match(compose, /\.\.\/docs\/deploy\/nginx\.conf:\/etc\/nginx\/nginx\.conf:ro/);
  assert.ok(existsSync(path.join(sourceDir, "docs/deploy/nginx.conf")));
  const cfg = JSON.parse(read("docker/livegate-compose.json"));
  assert.equal(cfg.redis.url, "redis://127.0.0.1:6379");
  assert.equal(cfg.listen.public, "127.0.0.1:8080"); // only nginx reaches it
  // The compose config passes the gateway's strict check.
  const check = run(process.env.LG_BINARY || path.join(sourceDir, "build/livegate"),
                    ["--config", path.join(sourceDir, "docker/livegate-compose.json"), "--check-config"]);
  assert.equal(check.code, 0, check.out);
});
