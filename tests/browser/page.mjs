// page.mjs - the blank test page that startGateway() serves beside static/ (at `base`, the
// gateway or a proxy in front of it), which loads livegate.js and records everything one
// subscription reports.
export async function blankPage(browser, base) {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.errors = errors;
  const res = await page.goto(`${base}__test.html`);
  if (res.status() !== 200) throw new Error(`${base}__test.html answered ${res.status()}`);
  return page;
}

// Starts subscribe(topics, opts) in the page; the record is window.rec.
export async function startSubscription(page, libPath, topics, opts) {
  await page.evaluate(async ([libPath, topics, opts]) => {
    const { subscribe } = await import(libPath);
    const rec = (window.rec = { events: [], states: [], gaps: [], resets: [], ends: [] });
    window.sub = subscribe(topics, Object.assign(opts, {
      onEvent: (e) => rec.events.push({ topic: e.topic, seq: e.seq, data: e.data, event: e.event, transport: e.transport }),
      onGap: (g) => rec.gaps.push(g),
      onReset: (r) => rec.resets.push(r),
      onEnd: (e) => rec.ends.push(e),
      onState: (s) => rec.states.push(`${s.state}:${s.transport}${s.error ? " " + s.error : ""}`),
    }));
  }, [libPath, topics, opts]);
}

export const record = (page) => page.evaluate(() => window.rec);

export async function waitRecord(page, what, predicate, timeoutMs = 15000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const rec = await record(page);
    if (predicate(rec)) return rec;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; record: ${JSON.stringify(rec)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
