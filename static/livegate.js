// livegate.js - the browser (and Node 18+) client of livegate: one subscription over WebSocket,
// Server-Sent Events or long-poll, with one cursor kept across reconnects and transport
// switches so the app sees every event once, in order (docs/client.md).
//
// Owns: one connection at a time per subscription, its timers and its cursor. Bounds: one
// connection, one pending timer, an SSE line buffer cut at 1 MiB (the stream is dropped and
// resumed from the cursor past it). Failure: a transport that cannot open is left for the next
// one in `transports`; a connection that drops is reopened on the same transport after a backoff
// (exponential, full jitter), one the gateway refused for now (429, 503, an SSE `refused`
// event: full or draining) likewise, or after the event's retry_ms; a refusal that a retry
// cannot cure (400, 401, 403, a WebSocket `error` or close 1008) ends the subscription with
// onEnd({reason:"error"}). An expired token
// (401, close 1008 or 4003, SSE `error` event `token_expired`) is renewed through
// opts.getToken and the connection reopened at once from the cursor; without the hook, or
// when the token it just gave is refused as expired too, it ends the subscription. Over
// WebSocket the token is renewed before its exp with {"op":"refresh"}. getToken is awaited on
// this file's timers only; a thrown error is retried after a backoff. A topic the
// gateway ends (an `end` notice: the topic was deleted) leaves the subscription with
// onEnd({reason:"topic_end", topic}); when none is left, onEnd({reason:"ended"}) follows.
// SSE is read with fetch(), not EventSource: it works in Node, sends no header that would need
// a CORS preflight, sees the heartbeat comments (needed to tell a quiet stream from a buffering
// proxy) and leaves reconnecting to this file instead of the browser.
// Tabs: the subscriptions of one origin to the same topics at the same baseUrl share one
// connection (shared() below): one tab, holding a Web Lock, connects and relays what it gets on
// a BroadcastChannel; each tab keeps its own cursor and drops what is not past it, so when the
// leader's tab closes the next tab to get the lock connects from its cursor and no tab loses or
// repeats an event. Where either API is missing, with {shareTabs: false}, or with `since` or
// `rewind`, a subscription has its own connection.
// Start: {since: "latest"} (the newest retained event) or {rewind: N} (the last N) is sent
// only while the cursor is empty; from the first position on, reconnects resume from it.
// Filter: {filter: "region:eu,kind:a|b"} delivers only the events whose tags match (docs/
// protocol.md); it is sent on every connection, and the cursor moves past what it kept out.
// Deltas: over WebSocket the client asks for deltas (delta=fossil); on a document topic the
// gateway may send an event as a Fossil delta of the event before it on this connection. The
// client keeps the last event message of each topic (one string per topic) and rebuilds the
// full message from it, so onEvent never sees a delta. A delta that does not apply (no base,
// a broken delta) drops the connection; the reconnect from the cursor gets the next whole.
//
// Presence: join, leave and occupancy notices (topics a topic rule marks) go to onJoin,
// onLeave and onOccupancy; a `resync` (this client missed a batch) to onResync, after which
// presence(topic) gives the list again. presence(topic) asks over the WebSocket
// ({"op":"presence"}, one answer per page, in order); on SSE and long-poll it is refused
// (code "not_supported"): the member list is on the control port, for backends.

const MAX_LINE_BUFFER = 1 << 20;
const FATAL_HTTP = [400, 401, 403, 404];
// Node's fetch and WebSocket share one pool of keep-alive connections, and the gateway takes a
// WebSocket upgrade only as the first request of a connection: outside a browser, HTTP requests
// close theirs. (A browser ignores this header and keeps its WebSockets on sockets of their own.)
const CLOSE = globalThis.document ? {} : { connection: "close" };

class Fatal extends Error {
  constructor(code, message) { super(message); this.code = code; }
}
const EXPIRED = "token_expired";
const PRESENCE = ["join", "leave", "occupancy", "resync"];
const ON_PRESENCE = ["onJoin", "onLeave", "onOccupancy", "onResync"];
// The claims of a JWT are read only for its exp, to refresh it in time: the gateway verifies it.
function tokenExpMs(token) {
  try {
    return JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).exp * 1000;
  } catch { return 0; }
}

// One cursor entry per topic: "topic@epoch:seq" (docs/protocol.md). Topic names hold no '@'.
function parseEntry(entry) {
  const at = entry.lastIndexOf("@"), colon = entry.indexOf(":", at);
  if (at < 1 || colon < 0) return null;
  return { topic: entry.slice(0, at), epoch: entry.slice(at + 1, colon), seq: +entry.slice(colon + 1) };
}

function parseCursor(cursor) {
  return (cursor || "").split(",").map(parseEntry).filter(Boolean);
}

// A Fossil delta (https://fossil-scm.org/home/doc/tip/www/delta_format.wiki) applied to the
// UTF-8 bytes of base: "<size>\n", then "<n>@<offset>," (copy n bytes of base) or "<n>:<bytes>"
// (insert), until "<checksum>;". Numbers are base 64 in these digits.
const DIGIT = {};
[..."0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~"].forEach((c, i) => DIGIT[c.charCodeAt(0)] = i);
function applyDelta(base, d) {
  let p = 0, n = 0, sum = 0, count;
  const bad = () => { throw Error("bad delta"); };
  const num = () => { const s = p; let v = 0; while (DIGIT[d[p]] >= 0) v = v * 64 + DIGIT[d[p++]]; return p > s ? v : bad(); };
  const out = new Uint8Array(num());
  if (d[p++] !== 10) bad();
  while ((count = num(), d[p++]) !== 59) {
    const op = d[p - 1], from = op === 64 ? base : op === 58 ? d : bad(), at = op === 64 ? num() : p;
    if ((op === 64 && d[p++] !== 44) || at + count > from.length) bad();
    out.set(from.subarray(at, at + count), n);  // past the size: a RangeError
    n += count;
    if (op === 58) p += count;
  }
  for (let i = 0; i < n; i++) sum = (sum + (out[i] << (24 - 8 * (i & 3)))) >>> 0;
  return n === out.length && sum === count && p === d.length ? out : bad();
}
const utf8 = new TextEncoder(), fromUtf8 = new TextDecoder();

const baseOf = (opts) => new URL(opts.baseUrl || new URL(".", import.meta.url), globalThis.location && location.href);
const cursorOf = (pos) => [...pos.values()].map((e) => `${e.topic}@${e.epoch}:${e.seq}`).join(",");
const caller = (opts) => (name, arg) => { try { opts[name] && opts[name](arg); } catch (e) { setTimeout(() => { throw e; }); } };

export function subscribe(topics, opts = {}) {
  const g = globalThis;
  return opts.shareTabs !== false && !opts.since && opts.rewind == null && g.navigator && navigator.locks && g.BroadcastChannel
    ? shared([].concat(topics), opts) : own(topics, opts);
}

// One tab's share of a connection. Messages on the channel: {k: callback name, a: its
// argument, c: the leader's cursor}, and {k: "hello"} (a new tab asks the leader's state and
// cursor). A tab learns from c the position of a topic it has none for yet, so the tab that
// takes over connects from a position for every topic.
function shared(topics, opts) {
  const name = `livegate ${baseOf(opts)} ${[...topics].sort()}${opts.filter ? " " + opts.filter : ""}`;
  const ch = new BroadcastChannel(name), pos = new Map(), quit = new AbortController(), call = caller(opts);
  const sub = { state: "connecting", transport: null, error: null, role: "follower", cursor: () => cursorOf(pos) };
  let inner = null, stopped = false, release;
  const learn = (c) => { for (const e of parseCursor(c)) if (!pos.has(e.topic) && topics.includes(e.topic)) pos.set(e.topic, e); };
  function take({ k, a, c }) {
    if (stopped) return;
    if (k === "onState") {
      if (a.state === "closed") return;  // the leader closed: its onEnd says whether all ends
      Object.assign(sub, { state: a.state, transport: a.transport, error: a.error });
    } else if (k === "onEnd") {
      if (a.reason === "closed") return;
      if (a.topic) topics = topics.filter((t) => t !== a.topic), pos.delete(a.topic);
      else stop(), sub.state = "closed";
    } else if (k === "onEvent" || k === "onGap" || k === "onReset") {
      const p = parseEntry(a.id), had = pos.get(p.topic);
      if (k !== "onReset" && had && had.epoch === p.epoch && p.seq <= had.seq) return;
      pos.set(p.topic, p);
    }
    learn(c);
    call(k, a);
  }
  // A tab that asks is told the leader's state and cursor; one that asks who is here
  // ({k: "who", q: its number, t: topic}), the leader's answer ({k: "here", q, r | e}).
  const asked = new Map();
  ch.onmessage = ({ data: d }) => {
    const p = asked.get(d.q);
    if (d.k === "who") inner && inner.presence(d.t).then((r) => ch.postMessage({ k: "here", q: d.q, r }),
      (e) => ch.postMessage({ k: "here", q: d.q, e: [e.code, e.message] }));
    else if (d.k === "here") p && (asked.delete(d.q), d.e ? p[1](new Fatal(...d.e)) : p[0](d.r));
    else if (d.k !== "hello") take(d);
    else if (inner) ch.postMessage({ k: "onState", a: { state: sub.state, transport: sub.transport, attempt: 0, error: sub.error }, c: inner.cursor() });
  };
  sub.presence = (t) => inner ? inner.presence(t) : new Promise((...p) => {
    const q = Math.random();
    asked.set(q, p);
    ch.postMessage({ k: "who", q, t });
  });
  ch.postMessage({ k: "hello" });
  // The lock is held until this tab closes the subscription, or the tab goes.
  navigator.locks.request(name, { signal: quit.signal }, () => new Promise((done) => {
    if (stopped) return done();
    release = done;
    sub.role = "leader";
    // Posted before taken: taking an onEnd may close the channel.
    const relay = (k) => (a) => { const m = { k, a, c: inner.cursor() }; if (!stopped) ch.postMessage(m); take(m); };
    inner = own(topics, Object.assign({}, opts, { since: cursorOf(pos) || undefined,
      ...Object.fromEntries(["onEvent", "onGap", "onReset", "onState", "onEnd", ...ON_PRESENCE].map((k) => [k, relay(k)])) }));
  })).catch(() => {});
  function stop() {
    stopped = true;
    quit.abort();
    if (inner) inner.close();  // its last callbacks are not relayed (stopped)
    ch.close();
    if (release) release();
  }
  sub.close = () => { if (stopped) return; stop(); Object.assign(sub, { state: "closed" }); call("onEnd", { reason: "closed" }); };
  sub.publish = (...a) => inner ? inner.publish(...a)
    : Promise.reject(new Fatal("transport_cannot_publish", "another tab holds the connection: publish with {shareTabs: false}"));
  return sub;
}

function own(topics, opts) {
  topics = [].concat(topics);
  const WS = opts.WebSocket || globalThis.WebSocket;
  const order = (opts.transports || ["websocket", "sse", "poll"])
    .filter((t) => t !== "websocket" || WS);
  const base = baseOf(opts);
  const heartbeatMs = opts.heartbeatMs || 15000;
  const minMs = opts.minBackoffMs || 250, maxMs = opts.maxBackoffMs || 15000;
  const pollTimeoutS = opts.pollTimeoutS ?? 25;
  const cursor = new Map(), worked = new Set();
  // token: the one sent; needToken: ask getToken before the next connect; fresh: the token
  // came from getToken and no connection has opened with it yet.
  let token = opts.token, needToken = !token && !!opts.getToken, fresh = false;
  for (const e of parseCursor(opts.since)) cursor.set(e.topic, e);
  const start = opts.since === "latest" ? { since: "latest" } : opts.rewind != null ? { rewind: opts.rewind } : {};

  let index = 0, attempt = 0, stopped = false, timer = null, closeConn = null, generation = 0;
  let askPresence = null;  // set while a WebSocket is open
  const sub = { state: "connecting", transport: order[0], error: null };
  // Publishing (WebSocket only): the open socket, and ref -> [resolve, reject] of each publish
  // awaiting its answer.
  let live = null, refs = 0;
  const pending = new Map();
  const settle = (ref, f) => { const p = pending.get(ref); pending.delete(ref); f(p); };
  sub.publish = (topic, data, o = {}) => new Promise((ok, no) => {
    if (!live) return no(sub.transport === "websocket"
      ? new Fatal("not_open", `the WebSocket is ${sub.state}, not open`)
      : new Fatal("transport_cannot_publish", `publishing needs the WebSocket transport; this subscription uses ${sub.transport}`));
    pending.set(++refs, [ok, no]);
    live.send(JSON.stringify({ op: "publish", ref: refs, topic, data, type: o.event, key: o.key, idempotency_key: o.idempotencyKey }));
  });

  const call = caller(opts);
  const setState = (state, extra) => {
    Object.assign(sub, { state }, extra);
    call("onState", { state, transport: sub.transport, attempt, error: sub.error });
  };
  const cursorText = () => cursorOf(cursor);
  sub.cursor = cursorText;

  function url(path, cursorParam, extra) {
    const u = new URL(path, base);
    if (u.protocol.startsWith("http") && path === "ws") u.protocol = u.protocol.replace("http", "ws");
    for (const t of topics) u.searchParams.append("topic", t);
    const c = cursorText();
    if (c) u.searchParams.set(cursorParam, c);
    else for (const k in start) u.searchParams.set(k, start[k]);
    if (opts.filter) u.searchParams.set("filter", opts.filter);
    if (token) u.searchParams.set("access_token", token);
    for (const k in extra) u.searchParams.set(k, extra[k]);
    return u.href;
  }

  // Learns from a cursor the gateway gives (a subscribed answer, a poll answer, an id-only SSE
  // block) the position of topics the cursor does not name yet, and moves the others forward
  // within their epoch: past events a filter kept out, which no event or notice shows.
  function learn(text) {
    for (const e of parseCursor(text)) {
      const had = cursor.get(e.topic);
      if (topics.includes(e.topic) && (!had || (had.epoch === e.epoch && e.seq > had.seq))) cursor.set(e.topic, e);
    }
  }

  // A presence notice: no id, the cursor does not move (docs/protocol.md, "Presence").
  // onJoin/onLeave({topic, members}), onOccupancy({topic, subscribers}), onResync({topic}).
  function presenceNotice({ type, v, ...a }, transport) {
    call(ON_PRESENCE[PRESENCE.indexOf(type)], Object.assign(a, { transport }));
    return true;
  }

  // One delivered item in the envelope of docs/protocol.md; false when it was a duplicate.
  function deliver(item, transport) {
    if (PRESENCE.includes(item.type)) return presenceNotice(item, transport);
    const pos = parseEntry(item.id || "");
    if (!pos) return false;
    const had = cursor.get(pos.topic);
    if (item.type === "event") {
      if (had && had.epoch === pos.epoch && pos.seq <= had.seq) return false;
      cursor.set(pos.topic, pos);
      call("onEvent", { topic: pos.topic, id: item.id, seq: pos.seq, event: item.event || "message",
                        data: item.data, time: item.time, key: item.key, transport });
    } else if (item.type === "end") {
      // The topic was deleted: it leaves the subscription (and the cursor) for good.
      topics = topics.filter((t) => t !== pos.topic);
      cursor.delete(pos.topic);
      call("onEnd", { reason: "topic_end", topic: pos.topic, id: item.id, transport });
      if (!topics.length) finish({ reason: "ended" });
    } else if (item.type === "gap" || item.type === "reset") {
      if (had && had.epoch === pos.epoch && pos.seq <= had.seq && item.type === "gap") return false;
      cursor.set(pos.topic, pos);
      call(item.type === "gap" ? "onGap" : "onReset", Object.assign({ transport }, item));
    }
    return true;
  }

  function opened() {
    attempt = fresh = 0;
    worked.add(sub.transport);
    setState("open", { error: null });
  }

  // A connection ended. `wasOpen`: it had opened, so the same transport is tried again.
  function ended(gen, wasOpen, err) {
    if (gen !== generation || stopped) return;
    closeConn = null;
    if (err && err.code === EXPIRED && opts.getToken && !fresh) {
      needToken = true;  // renew it and reconnect at once, from the cursor, on the same transport
      sub.error = err.message.startsWith(EXPIRED) ? err.message : `${EXPIRED}: ${err.message}`;
      return (timer = setTimeout(connect));
    }
    if (err instanceof Fatal || (err && err.code === EXPIRED))
      return finish({ reason: "error", error: { code: err.code, message: err.message } });
    // A transport that never opened here is blocked (a proxy refusing upgrades, a firewall):
    // try the next. One that worked before is only down (a restart): try it again, and so is
    // one the gateway refused over (429, 503, SSE `refused`: full or draining), after the
    // retry_ms a `refused` event gives.
    if (!wasOpen && !(err && err.refused) && !worked.has(order[index])) index = (index + 1) % order.length;
    const delay = (err && err.retryMs) || Math.random() * Math.min(maxMs, minMs * 2 ** attempt++);
    setState("backoff", { error: err ? String(err.message || err) : null, transport: order[index], retryInMs: Math.round(delay) });
    timer = setTimeout(connect, delay);
  }

  async function connect() {
    timer = null;
    const gen = ++generation, transport = (sub.transport = order[index]);
    setState("connecting");
    if (needToken) {
      let t;
      try { t = await opts.getToken({ transport }); } catch (e) { return ended(gen, true, e); }
      if (gen !== generation || stopped) return;
      if (!t) return finish({ reason: "error", error: { code: "token_missing", message: "getToken gave none" } });
      token = t;
      needToken = false;
      fresh = true;
    }
    const done = (wasOpen, err) => ended(gen, wasOpen, err);
    closeConn = { websocket: openWs, sse: openSse, poll: openPoll }[transport](done, gen);
  }

  function openWs(done, gen) {
    let isOpen = false, fatal = null, refreshTimer = null, refreshing = false;
    const ws = new WS(url("ws", "since", { delta: "fossil" }), "livegate.v1");
    const bases = new Map();  // topic: the last event message on this connection, for its delta
    // Presence questions, answered in order: [topic, members so far, resolve, reject].
    const asked = [], ask = (topic, after) => ws.send(JSON.stringify({ op: "presence", topic, after }));
    const unasked = (m) => { askPresence = null; for (const q of asked.splice(0)) q[3](new Fatal("not_connected", m)); };
    askPresence = (topic) => new Promise((...p) => {
      if (!isOpen) throw new Fatal("not_connected", "not connected");
      asked.push([topic, [], ...p]);
      ask(topic);
    });
    const answered = (msg) => {
      const q = asked[0];
      q[1].push(...msg.members);
      if (msg.next) return ask(q[0], msg.next);  // the next page, before any later question's
      asked.shift()[2]({ topic: q[0], members: q[1], unlisted: msg.unlisted });
    };
    // Before exp (a third of its remaining life, at most 10 s, ahead), send a fresh token.
    const planRefresh = () => {
      clearTimeout(refreshTimer);
      const left = tokenExpMs(token) - Date.now();
      // (setTimeout fires at once past 2^31 ms: a token of a month is refreshed after 24 days)
      const wait = Math.min(2 ** 31 - 1, left - Math.min(10000, left / 3));
      if (opts.getToken && left > 0) refreshTimer = setTimeout(refresh, wait);
    };
    const refresh = async () => {
      let t;
      try { t = await opts.getToken({ transport: "websocket" }); } catch { return; } // 4003 renews
      if (gen !== generation || !t || ws.readyState !== 1) return;
      token = t;
      refreshing = true;
      ws.send(JSON.stringify({ op: "refresh", token: t }));
    };
    ws.onmessage = (m) => {
      let msg;
      try { msg = JSON.parse(m.data); } catch { return; }
      if (msg.type === "delta") try {
        const b = bases.get(msg.topic), e = parseEntry(msg.id);
        if (b.epoch !== e.epoch || b.seq + 1 !== e.seq) throw Error("not after the last event");
        const text = fromUtf8.decode(applyDelta(utf8.encode(b.text), utf8.encode(msg.delta)));
        msg = JSON.parse(text);
        m = { data: text };
      } catch (e) {
        fatal = Error(`the delta of ${msg.id} did not apply (${e.message})`);  // reconnects
        return ws.close(1000);
      }
      if (msg.type === "event") bases.set(msg.topic, Object.assign(parseEntry(msg.id), { text: m.data }));
      if (msg.type === "published" || msg.op === "publish") {  // never the subscription's end
        if (pending.has(msg.ref)) settle(msg.ref, ([ok, no]) => msg.id ? ok(msg.id) : no(new Fatal(msg.code, msg.message)));
      } else if (msg.type === "subscribed") { learn(msg.cursor); isOpen = true; live = ws; opened(); planRefresh(); }
      else if (msg.type === "authorized") {
        refreshing = false;
        if (msg.unsubscribed && msg.unsubscribed.length) {
          fatal = new Fatal("forbidden", `the refreshed token does not cover ${msg.unsubscribed}`);
          ws.close(1000);
        } else planRefresh();
      }
      else if (msg.type === "presence" && asked.length) answered(msg);
      // Past the subscribe only refreshes (token_ codes), publishes (above) and presence
      // questions are answered.
      else if (msg.type === "error" && asked.length && !(refreshing && /^token_/.test(msg.code)))
        asked.shift()[3](new Fatal(msg.code, msg.message));
      // A refused refresh changes nothing: at exp the 4003 renews the token.
      else if (msg.type === "error" && refreshing && /^token_/.test(msg.code)) refreshing = false;
      else if (msg.type === "error") {
        const retry = msg.code === "too_many_new_topics" || msg.code === "unavailable" ||
                      msg.code === "hook_unavailable";
        fatal = retry ? new Error(msg.message) : new Fatal(msg.code, msg.message);
        ws.close(1000);
      }
      else deliver(msg, "websocket");
    };
    ws.onclose = (e) => {
      clearTimeout(refreshTimer);
      unasked("connection closed");
      dropPending();
      if (e.code === 4003 && !fatal) fatal = new Fatal(EXPIRED, e.reason || "token expired");
      if (e.code === 1008 && !fatal)
        fatal = new Fatal(/^token_/.test(e.reason) ? e.reason : "policy",
                          e.reason || "closed by policy (1008)");
      done(isOpen, fatal || new Error(`WebSocket closed (${e.code}${e.reason ? " " + e.reason : ""})`));
    };
    return () => { clearTimeout(refreshTimer); unasked("closed"); dropPending(); ws.onclose = ws.onmessage = null; ws.close(1000); };
  }

  // The socket went: what awaits an answer may or may not have been published.
  function dropPending() {
    live = null;
    for (const ref of [...pending.keys()])
      settle(ref, ([, no]) => no(new Fatal("closed", "closed before the answer: maybe published (retry with an idempotencyKey)")));
  }

  async function httpGet(path, param, extra, signal) {
    const res = await (opts.fetch || fetch)(url(path, param, extra), { signal, cache: "no-store", headers: CLOSE });
    if (res.ok) return res;
    let body = {};
    try { body = await res.json(); } catch {}
    const msg = `${res.status} ${body.message || res.statusText}`;
    if (FATAL_HTTP.includes(res.status)) throw new Fatal(body.error || String(res.status), msg);
    throw Object.assign(new Error(msg), { refused: true });
  }

  function openSse(done) {
    const ctl = new AbortController();
    let isOpen = false, lastByte = Date.now(), probing = false;
    // Silence past the heartbeat: either the stream is buffered by a proxy or nothing happened.
    // A poll from the cursor tells which: if it answers while the stream has not even begun
    // (the gateway sends its first lines at once), or sees events the stream did not deliver,
    // a proxy holds the stream back.
    const watch = setInterval(async () => {
      if (probing || Date.now() - lastByte < heartbeatMs * 1.5) return;
      probing = true;
      try {
        const res = await httpGet("poll", "since", { timeout: 0 }, ctl.signal);
        const body = await res.json();
        const toPoll = order.indexOf("poll");
        if ((!isOpen || body.events.length) && toPoll > order.indexOf("sse") && !ctl.signal.aborted) {
          order.splice(0, toPoll);  // the stream is buffered: stay on long-poll from now on
          index = 0;
          stop(new Error("SSE silent past the heartbeat while polls answer: buffering proxy"), true);
        }
      } catch {}
      probing = false;
    }, Math.max(250, heartbeatMs / 4));
    const stop = (err, wasOpen) => { clearInterval(watch); ctl.abort(); done(wasOpen ?? isOpen, err); };

    (async () => {
      // Without a position, a stream a proxy holds back could be left only by losing what it
      // held: take the gateway's position first (and what a start replays), so long-poll can
      // go on from it.
      if (cursor.size < topics.length) {
        const body = await (await httpGet("poll", "since", { timeout: 0 }, ctl.signal)).json();
        for (const item of body.events) deliver(item, "poll");
        learn(body.cursor);
      }
      const res = await httpGet("sse", "last_event_id", {}, ctl.signal);
      const reader = res.body.getReader(), dec = new TextDecoder();
      let buf = "", block = { data: [] };
      for (;;) {
        const { value, done: eof } = await reader.read();
        if (eof) throw new Error("SSE stream ended");
        lastByte = Date.now();
        buf += dec.decode(value, { stream: true });
        if (buf.length > MAX_LINE_BUFFER) throw new Error("SSE line over 1 MiB");
        let nl;
        while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
          if (buf[nl] === "\r" && nl + 1 === buf.length) break; // a CR whose LF may follow
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
          if (line === "") {
            // Open at the first block (the gateway's retry:), unless it is a refusal.
            if (!isOpen && block.event !== "refused") { isOpen = true; opened(); }
            sseBlock(block);
            block = { data: [] };
            continue;
          }
          const colon = line.indexOf(":");
          if (colon === 0) continue;  // a comment: the heartbeat
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? "" : line.slice(colon + (line[colon + 1] === " " ? 2 : 1));
          if (field === "data") block.data.push(value);
          else if (field === "id" || field === "event") block[field] = value;
        }
      }
    })().catch((err) => { if (!ctl.signal.aborted) stop(err); });
    return () => { clearInterval(watch); ctl.abort(); };
  }

  // An SSE event's id is the whole stream's cursor: the entry that moved names its topic.
  function sseBlock(b) {
    const data = b.data.join("\n");
    if (PRESENCE.includes(b.event)) {
      deliver(Object.assign({ type: b.event }, JSON.parse(data)), "sse");
    } else if (b.event === "gap" || b.event === "reset" || b.event === "end") {
      deliver(Object.assign({ type: b.event }, JSON.parse(data)), "sse");
    } else if (b.event === "error" || b.event === "refused") {
      // refused: {status, error, message, retry_ms}: full or draining, retried after retry_ms
      const e = JSON.parse(data), err = new Error(`${e.status ? e.status + " " + e.error : e.code}: ${e.message}`);
      err.code = e.code;  // token_expired: renewed and resumed from the cursor (it is e.cursor)
      err.refused = err.retryMs = e.retry_ms;
      throw err;
    } else if (b.id !== undefined && b.data.length) {
      for (const e of parseCursor(b.id)) {
        const had = cursor.get(e.topic);
        if (topics.includes(e.topic) && (!had || had.epoch !== e.epoch || e.seq > had.seq))
          deliver({ type: "event", id: `${e.topic}@${e.epoch}:${e.seq}`, event: b.event || "message", data }, "sse");
      }
    } else if (b.id !== undefined) {
      learn(b.id);
    }
  }

  function openPoll(done) {
    const ctl = new AbortController();
    let isOpen = false;
    (async () => {
      for (;;) {
        const res = await httpGet("poll", "since", { timeout: cursor.size ? pollTimeoutS : 0 }, ctl.signal);
        const body = await res.json();
        if (!isOpen) { isOpen = true; opened(); }
        for (const item of body.events) deliver(item, "poll");
        learn(body.cursor);
      }
    })().catch((err) => { if (!ctl.signal.aborted) done(isOpen, err); });
    return () => ctl.abort();
  }

  function finish(info) {
    stopped = true;
    clearTimeout(timer);
    if (closeConn) closeConn();
    closeConn = null;
    setState("closed", { error: info.error || null });
    call("onEnd", info);
  }

  sub.close = () => { if (!stopped) finish({ reason: "closed" }); };
  // Who listens to topic: {topic, members, unlisted}, every page asked for in turn.
  sub.presence = (topic) => askPresence ? askPresence(topic) : Promise.reject(sub.transport === "websocket"
    ? new Fatal("not_connected", "not connected") : new Fatal("not_supported", `presence() needs the WebSocket, not ${sub.transport}`));
  if (!order.length) setTimeout(() => finish({ reason: "error", error: { code: "no_transport", message: "no usable transport" } }));
  else setTimeout(connect);
  return sub;
}
