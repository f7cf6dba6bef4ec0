// test_size.mjs - static/livegate.js stays small (under 8 KB minified, as the issue asks) and
// loads as an ES module in Node, which exports subscribe().
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { minify } from "terser";
import { sourceDir } from "./lib.mjs";

const file = path.join(sourceDir, "static/livegate.js");

test("livegate.js minifies to under 8 KB", async () => {
  const { code } = await minify(readFileSync(file, "utf8"), { module: true, compress: true, mangle: true });
  const bytes = Buffer.byteLength(code);
  console.log(`livegate.js: ${readFileSync(file).length} bytes, ${bytes} minified`);
  assert.ok(bytes < 8192, `${bytes} bytes minified`);
});

test("livegate.js is an ES module Node imports", async () => {
  const mod = await import(file);
  assert.deepEqual(Object.keys(mod), ["subscribe"]);
  assert.equal(typeof mod.subscribe, "function");
});
