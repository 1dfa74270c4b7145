// Loads the console page in headless Chromium (playwright-core) and times
// what an operator waits for: from navigation to a filled device table with
// the header's device count, and a re-sort (a click on the "tiles" header)
// until the table shows it. Prints one JSON line. Works with the page before
// paging (every row) and after (one page of rows and the fleet's total).
// Usage: node page_load.js URL DEVICES
"use strict";
const { chromium } = require("playwright-core");

(async () => {
  const [url, devices] = process.argv.slice(2);
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
                                          args: ["--no-sandbox"] });
  const out = { devices: Number(devices) };
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const t0 = Date.now();
    await page.goto(url);
    await page.waitForFunction(() => document.getElementById("connection").className === "ok" &&
                                     document.querySelectorAll("#fleet tbody tr").length > 0,
                               null, { timeout: 60000 });
    out.load_ms = Date.now() - t0;
    out.rows = await page.locator("#fleet tbody tr").count();
    out.header = await page.locator("#h-devices").textContent();
    // A few polls later: how long each poll's main-thread work takes.
    const busy = await page.evaluate(() => new Promise(done => {
      let long = 0;
      new PerformanceObserver(l => l.getEntries().forEach(e => { long += e.duration; }))
        .observe({ entryTypes: ["longtask"] });
      setTimeout(() => done(long), 5000);
    }));
    out.long_tasks_ms_per_5s = Math.round(busy);
    const first = await page.locator("#fleet tbody tr").first().getAttribute("data-device");
    const t1 = Date.now();
    // Clicked from the page itself: the time is the page's, not the driver's
    // wait for a still layout. Sorted by id already, so now descending.
    await page.evaluate(() => document.querySelector('#fleet th[data-key="id"]').click());
    await page.waitForFunction(f => {
      const row = document.querySelector("#fleet tbody tr");
      return row && row.dataset.device !== f;
    }, first, { timeout: 30000, polling: 100 });
    out.resort_ms = Date.now() - t1;
  } catch (e) {
    out.error = e.message.split("\n")[0];
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
})();
