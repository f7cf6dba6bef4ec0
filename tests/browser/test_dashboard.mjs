// test_dashboard.mjs - static/index.html in headless Chromium against the real gateway: it
// subscribes, lists events with gap, reset and end markers, shows the connection state, and its
// $sys/stats charts move; the screenshot it takes is checked not to be blank.
// The screenshot goes to $LG_SCREENSHOT_DIR (default: a temp dir); the README's was taken with
//   LG_SCREENSHOT_DIR=docs/images LG_DASHBOARD_LOAD_S=75 ctest -R browser/test_dashboard
// (75 s more of a varying load, so the charts have a history to show).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { startGateway, launchBrowser, publish, tempDir, sleep, get } from "./lib.mjs";

const canvases = ["chart-clients", "chart-rates", "chart-drops"];

test("the dashboard: events, gap and reset markers, state, and moving $sys/stats charts", async () => {
  const gw = await startGateway({ topic_rules: [{ match: "audit", history: { max_events: 3 } }] });
  const browser = await launchBrowser();
  const extra = [];
  try {
    let audit;
    for (let i = 1; i <= 10; i++) audit = await publish(gw, "audit", JSON.stringify({ step: i }));
    const epoch = audit.id.split("@")[1].split(":")[0];
    // Other clients, so the clients chart has something of each transport.
    for (const t of ["a", "b"]) extra.push(await get(`${gw.publicUrl}sse?topic=${t}`, { onData: () => {} }));
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    const since = `audit@${epoch}:1,prices@00000000:4`;
    await page.goto(`${gw.publicUrl}?topics=demo,audit,prices&transport=websocket&since=${since}`);
    await page.waitForSelector('#state[data-state="open"][data-transport="websocket"]', { timeout: 10000 });
    await page.waitForSelector('#stats-state[data-state="open"]', { timeout: 10000 });

    const kinds = async () => page.$$eval("#events li", (lis) => lis.map((li) => `${li.dataset.kind} ${li.children[1].textContent} ${li.children[2].textContent}`).reverse());
    const first = await kinds();
    assert.ok(first.includes(`gap audit@${epoch}:7 gap: events 2..7 of audit will not arrive`), first.join("\n"));
    assert.ok(first.includes(`reset prices@${epoch}:0 reset: prices has a new epoch ${epoch}; reload its state`), first.join("\n"));
    const auditRows = first.filter((k) => k.includes(" audit@"));
    assert.deepEqual(auditRows, [
      `gap audit@${epoch}:7 gap: events 2..7 of audit will not arrive`,
      `event audit@${epoch}:8 {"step":8}`, `event audit@${epoch}:9 {"step":9}`, `event audit@${epoch}:10 {"step":10}`,
    ]);

    // The admin API deletes a topic: the page marks its end.
    const del = await fetch(`${gw.controlUrl}v1/topics/prices`, { method: "DELETE" });
    assert.equal(del.status, 200);
    await page.waitForSelector("#events li.end", { timeout: 5000 });
    assert.ok((await kinds()).includes(`end prices@${epoch}:0 end: prices was deleted; it leaves the subscription`), (await kinds()).join("\n"));

    const snapshot = () => page.evaluate((ids) => ids.map((id) => {
      const c = document.getElementById(id);
      return { points: Number(c.dataset.points || 0), pixels: c.toDataURL() };
    }), canvases);
    const before = await snapshot();
    for (let i = 1; i <= 12; i++) {
      await publish(gw, "demo", `hello ${i}`);
      await sleep(200);
    }
    await sleep(1200);
    const afterCharts = await snapshot();
    for (const [i, id] of canvases.entries()) {
      assert.ok(afterCharts[i].points >= before[i].points + 2, `${id}: ${before[i].points} -> ${afterCharts[i].points} points`);
      assert.notEqual(afterCharts[i].pixels, before[i].pixels, `${id} did not change`);
    }
    const stats = await page.evaluate(() => window.dashboard.stats);
    const last = stats.at(-1);
    for (const key of ["time_ms", "interval_ms", "clients", "events_in_per_s", "events_out_per_s", "dropped", "refused", "backlog"])
      assert.ok(key in last, `$sys/stats has ${key}`);
    assert.ok(stats.some((s) => s.events_in_per_s > 0), "a second with events in");
    assert.ok(last.clients.sse >= 2 && last.clients.websocket >= 2, JSON.stringify(last.clients));
    assert.equal(await page.textContent("#c-clients"), String(last.clients.sse + last.clients.websocket + last.clients.poll));
    const rows = await kinds();
    assert.deepEqual(rows.filter((k) => k.includes(" demo@")).map((k) => k.split(" ").slice(2).join(" ")),
      Array.from({ length: 12 }, (_, i) => `hello ${i + 1}`));
    assert.deepEqual(errors, []);

    await varyingLoad(gw, Number(process.env.LG_DASHBOARD_LOAD_S || 0), extra);
    const dir = process.env.LG_SCREENSHOT_DIR ? path.resolve(process.env.LG_SCREENSHOT_DIR) : tempDir("shot");
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, "dashboard.png");
    await page.screenshot({ path: file });
    // Not blank: decoded by the browser itself, the picture has many colours and most of its
    // pixels are not the background's.
    const png = readFileSync(file).toString("base64");
    const look = await page.evaluate(async (b64) => {
      const img = new Image();
      img.src = `data:image/png;base64,${b64}`;
      await img.decode();
      const c = new OffscreenCanvas(img.width, img.height), g = c.getContext("2d");
      g.drawImage(img, 0, 0);
      const d = g.getImageData(0, 0, img.width, img.height).data;
      const colours = new Set();
      let notBackground = 0;
      for (let i = 0; i < d.length; i += 4) {
        colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
        if (Math.abs(d[i] - 0x0f) + Math.abs(d[i + 1] - 0x14) + Math.abs(d[i + 2] - 0x20) > 6) notBackground++;
      }
      return { width: img.width, height: img.height, colours: colours.size, share: notBackground / (d.length / 4) };
    }, png);
    console.log(`screenshot ${file}: ${JSON.stringify(look)}`);
    assert.equal(look.width, 1440);
    assert.ok(look.colours > 200, `${look.colours} colours`);
    assert.ok(look.share > 0.3, `${look.share} of the pixels are not the background`);
    await page.close();
  } finally {
    for (const r of extra) r.req.destroy();
    await browser.close();
    assert.equal(await gw.stop(), 0);
  }
});

// Publishes to `load` (a topic the page does not list) at a rate that rises and falls, and
// opens and closes SSE and long-poll clients of it, for `seconds` (0: nothing), so a
// screenshot shows charts with a history and the page's list keeps its markers in view.
async function varyingLoad(gw, seconds, extra) {
  const end = Date.now() + seconds * 1000;
  let n = 0;
  while (Date.now() < end) {
    const phase = (end - Date.now()) / 1000;
    const rate = 20 + 18 * Math.sin(phase / 6);
    for (let i = 0; i < rate / 4; i++) await publish(gw, "load", `load ${++n}`);
    if (n % 7 === 0 && extra.length < 12) extra.push(await get(`${gw.publicUrl}sse?topic=load`, { onData: () => {} }));
    if (n % 5 === 0) get(`${gw.publicUrl}poll?topic=load&timeout=3`).catch(() => {});
    if (n % 11 === 0 && extra.length > 4) extra.shift().req.destroy();
    await sleep(250);
  }
}
