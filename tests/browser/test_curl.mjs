// test_curl.mjs - runs every `console` block of docs/curl.md, in order, with bash and curl
// against one fresh build/livegate, and checks that each block prints exactly the output the
// page shows. In the page, `<epoch>` is the gateway's epoch (one value throughout; learned
// from the first output that shows it, then put into the commands too), `<ms>` and `<n>` any
// number, `<new epoch>` an epoch;
// the addresses 127.0.0.1:8080 and :8081 become the test gateway's ports.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { startGateway, sourceDir } from "./lib.mjs";

function blocks(markdown) {
  const out = [];
  for (const m of markdown.matchAll(/^```console\n([\s\S]*?)^```$/gm)) {
    const commands = [], expected = [];
    let continued = false;
    for (const line of m[1].replace(/\n$/, "").split("\n")) {
      if (continued) commands[commands.length - 1] += "\n" + line;
      else if (line.startsWith("$ ")) commands.push(line.slice(2));
      else expected.push(line);
      continued = (line.startsWith("$ ") || continued) && line.endsWith("\\");
    }
    out.push({ commands, expected: expected.join("\n") });
  }
  return out;
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

test("every command of docs/curl.md prints what the page shows", async () => {
  const doc = readFileSync(path.join(sourceDir, "docs/curl.md"), "utf8");
  const all = blocks(doc);
  assert.ok(all.length >= 12, `${all.length} console blocks`);
  const gw = await startGateway({ workers: 2 });
  let epoch = null;
  try {
    for (const [i, b] of all.entries()) {
      let script = b.commands.join("\n")
        .replaceAll("127.0.0.1:8080", `127.0.0.1:${gw.publicPort}`)
        .replaceAll("127.0.0.1:8081", `127.0.0.1:${gw.controlPort}`);
      if (script.includes("<epoch>")) {
        assert.ok(epoch, `block ${i + 1} uses <epoch> before any output showed it`);
        script = script.replaceAll("<epoch>", epoch);
      }
      let output;
      try {
        output = execFileSync("bash", ["-c", script], { encoding: "utf8", timeout: 10000 });
      } catch (e) {
        output = e.stdout; // curl --max-time ends a stream with exit status 28: its output counts
        if (e.status !== 28) assert.fail(`block ${i + 1} (${b.commands[0]}) exited ${e.status}: ${e.stderr}`);
      }
      output = output.replace(/\n$/, "");
      const pattern = escape(b.expected)
        .replaceAll("<epoch>", epoch ? epoch : "([0-9a-f]{8})")
        .replaceAll("<ms>", "[0-9]+")
        .replaceAll("<n>", "[0-9.]+")
        .replaceAll("<new epoch>", "[0-9a-f]{8}")
        .replaceAll("\\(\\[0-9a-f\\]\\{8\\}\\)", "([0-9a-f]{8})");
      const m = new RegExp(`^${pattern}$`).exec(output);
      assert.ok(m, `block ${i + 1}: ${b.commands[0]}\n--- the page shows:\n${b.expected}\n--- it printed:\n${output}`);
      if (!epoch && m[1]) {
        epoch = m[1];
        assert.ok(m.slice(1).every((e) => e === epoch), "one epoch");
      }
    }
  } finally {
    assert.equal(await gw.stop(), 0);
  }
  console.log(`${all.length} blocks of docs/curl.md printed what the page shows (epoch ${epoch})`);
});
