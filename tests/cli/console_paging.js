// The console page at fleet size, in headless Chromium (playwright-core):
// with TOTAL devices the table shows one page of PER_PAGE rows and says how
// many there are; "next" shows the following rows; a click on the id
// header sorts the fleet, not the page (the highest id comes first). Prints
// "ok" lines and the load time, or the problems and exits 1.
// Usage: node console_paging.js URL TOTAL PER_PAGE
"use strict";
const { with_console_page } = require("./console_session.js");

(async () => {
  const [url, total, perPage] = process.argv.slice(2);
  const first_row = page => page.evaluate(() => {
    const row = document.querySelector("#fleet tbody tr");
    return row ? Number(row.dataset.device) : null;
  });
  await with_console_page(async (page, errors) => {
    const t0 = Date.now();
    await page.goto(url);
    await page.waitForFunction(n => document.querySelectorAll("#fleet tbody tr").length === n &&
                                    document.getElementById("connection").className === "ok",
                               Number(perPage), { timeout: 20000 });
    const loaded = Date.now() - t0;
    const pager = await page.locator("#pager-text").textContent();
    if (!pager.includes(`(${total} devices)`)) errors.push(`the pager says "${pager}", not ${total} devices`);
    else console.log(`ok: ${perPage} rows of ${total} devices ("${pager}"), shown ${loaded} ms after navigation`);

    const before = await first_row(page);
    await page.click("#b-next");
    await page.waitForFunction(n => /^rows [0-9]+/.test(document.getElementById("pager-text").textContent) &&
                                    document.getElementById("pager-text").textContent.startsWith(`rows ${n + 1}`),
                               Number(perPage), { timeout: 10000 });
    const after = await first_row(page);
    if (after === before) errors.push(`the next page starts with device ${after} too`);
    else console.log(`ok: the next page starts at device ${after}`);

    await page.click('#fleet th[data-key="id"]');  // sorted by id already: now descending
    await page.waitForFunction(() => document.getElementById("pager-text").textContent.startsWith("rows 1\u2013"),
                               null, { timeout: 10000 });
    const top = await first_row(page);
    const highest = await page.evaluate(async () => {
      const doc = await (await fetch("/api/state?per_page=1&sort=id&dir=desc")).json();
      return doc.fleet.page.ids[0];
    });
    if (top !== highest) errors.push(`sorted by id descending, the first row is ${top}, not ${highest}`);
    else console.log(`ok: sorting by id descending sorts the fleet (device ${top} first)`);
  });
})();
