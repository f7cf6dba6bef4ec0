// test_deltas.mjs - static/livegate.js in Node applies the deltas of a document topic: what
// onEvent gets over WebSocket (where the gateway sent most events as deltas) equals the
// published documents and what a long-poll subscriber (always whole events) gets, also after
// a gap (a cursor into evicted history: the gap notice, then the events whole, then deltas
// again) and across a reconnect. Needs a global WebSocket (Node 20 runs with
// --experimental-websocket: run.sh); without one it says so and skips.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { startGateway, publish, waitFor, sourceDir } from "./lib.mjs";

const lib = await import(path.join(sourceDir, "static/livegate.js"));
const open = [];
let gw;
before(async () => {
  gw = await startGateway({ history: { max_events: 4 }, topic_rules: [
    { match: "doc/damaged", document: true, history: { max_events: 100 } }, { match: "doc/*", document: true }] });
});
after(async () => {
  for (const s of open) s.close();
  assert.equal(await gw.stop(), 0);
});

// Version n of a document: a long body that changes every third version, a counter always.
const doc = (n) => ({ title: "Quarterly report", version: n, status: n % 2 ? "draft" : "final",
                      body: `section ${Math.floor(n / 3)} `.repeat(40), tags: ["é", "€", "𝄞"] });

// Every frame the client's WebSocket received, to count the deltas among them.
const frames = [];
class CountingWebSocket extends (globalThis.WebSocket || class {}) {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (m) => frames.push(m.data));
  }
}
const deltaFrames = () => frames.filter((f) => f.startsWith('{"type":"delta"')).length;

function collect(topic, transports, opts = {}) {
  const got = { events: [], gaps: [], states: [] };
  const sub = lib.subscribe([topic], {
    baseUrl: gw.publicUrl, transports, pollTimeoutS: 2, shareTabs: false, WebSocket: CountingWebSocket, ...opts,
    onEvent: (e) => got.events.push({ seq: e.seq, data: typeof e.data === "string" ? JSON.parse(e.data) : e.data }),
    onGap: (g) => got.gaps.push(`${g.from}-${g.to}`),
    onState: (s) => got.states.push(`${s.state}:${s.transport}`),
  });
  open.push(sub);
  return { sub, got };
}

test("deltas applied by livegate.js equal the whole events, also after a gap", { skip: !globalThis.WebSocket && "no WebSocket in this Node" }, async () => {
  const topic = "doc/node";
  const ws = collect(topic, ["websocket"]);
  const poll = collect(topic, ["poll"]);
  await waitFor("both to open", () => ws.sub.state === "open" && poll.sub.state === "open");
  const ids = [];
  for (let n = 1; n <= 12; n++) ids.push((await publish(gw, topic, JSON.stringify(doc(n)))).id);
  await waitFor("12 events on both", () => ws.got.events.length === 12 && poll.got.events.length === 12);
  const want = Array.from({ length: 12 }, (_, i) => ({ seq: i + 1, data: doc(i + 1) }));
  assert.deepEqual(ws.got.events, want);
  assert.deepEqual(poll.got.events, want);
  const live = deltaFrames();
  assert.ok(live >= 6, `${live} of 12 events came as deltas`);
  assert.deepEqual(ws.got.states, ["connecting:websocket", "open:websocket"]);

  // From seq 2, with history holding 9..12: a gap 3..8, then 9 whole and 10..12 (deltas of the
  // replay), then live events as deltas.
  const resumed = collect(topic, ["websocket"], { since: ids[1] });
  await waitFor("the replay", () => resumed.got.events.length === 4);
  assert.deepEqual(resumed.got.gaps, ["3-8"]);
  for (let n = 13; n <= 16; n++) await publish(gw, topic, JSON.stringify(doc(n)));
  await waitFor("the live events", () => resumed.got.events.length === 8 && ws.got.events.length === 16);
  assert.deepEqual(resumed.got.events, Array.from({ length: 8 }, (_, i) => ({ seq: i + 9, data: doc(i + 9) })));
  assert.ok(deltaFrames() >= live + 4 + 4, `${deltaFrames() - live} deltas since, over two connections`);
  const firstAfterGap = frames.findIndex((f) => f.includes('"type":"gap"'));
  assert.ok(frames[firstAfterGap + 1].startsWith('{"type":"event"'), "the event after a gap is whole");
});

// A delta that does not apply (here: damaged on the way) drops the connection; the client
// reconnects from its cursor, where the next event comes whole, and nothing is lost or repeated.
let damage = 0;
class DamagingWebSocket extends CountingWebSocket {
  set onmessage(fn) {
    super.onmessage = fn && ((m) => fn(damage && m.data.startsWith('{"type":"delta"')
      ? (damage--, { data: m.data.replace('"delta":"', '"delta":"1') }) : m));
  }
}

test("a delta that does not apply: a reconnect from the cursor, every event once", { skip: !globalThis.WebSocket && "no WebSocket in this Node" }, async () => {
  const topic = "doc/damaged";
  const ws = collect(topic, ["websocket"], { WebSocket: DamagingWebSocket, minBackoffMs: 10, maxBackoffMs: 20 });
  await waitFor("open", () => ws.sub.state === "open");
  await publish(gw, topic, JSON.stringify(doc(1)));
  await waitFor("the first event", () => ws.got.events.length === 1);
  damage = 1;
  for (let n = 2; n <= 6; n++) await publish(gw, topic, JSON.stringify(doc(n)));
  await waitFor("6 events", () => ws.got.events.length === 6);
  assert.equal(damage, 0);
  assert.deepEqual(ws.got.events, Array.from({ length: 6 }, (_, i) => ({ seq: i + 1, data: doc(i + 1) })));
  assert.deepEqual(ws.got.gaps, []);
  assert.deepEqual(ws.got.states.filter((s) => s.startsWith("open")), ["open:websocket", "open:websocket"]);
});
