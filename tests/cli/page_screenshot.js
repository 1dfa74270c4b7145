// Drives the console page in headless Chromium (playwright-core): waits
// until the page has drawn a training step and a row per device, fails on
// any script error, and writes a screenshot.
// Usage: node page_screenshot.js URL OUT.png DEVICES
"use strict";
const { chromium } = require("playwright-core");

(async () => {
  const [url, out, devices] = process.argv.slice(2);
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
                                          args: ["--no-sandbox"] });
  const errors = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.on("pageerror", e => errors.push(e.message));
    // Failed loads are judged by their address below; the browser's own
    // /favicon.ico (a 404 here) is not the page's doing.
    page.on("console", m => {
      if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(m.text());
    });
    page.on("response", r => {
      if (r.status() >= 400 && !r.url().endsWith("/favicon.ico")) errors.push(r.status() + " for " + r.url());
    });
    // Nothing but the console itself may be asked for.
    page.on("request", r => { if (!r.url().startsWith(url)) errors.push("fetched " + r.url()); });
    await page.goto(url);
    await page.waitForFunction(n => document.querySelectorAll("#fleet tbody tr").length === n &&
                                    /^[0-9]+$/.test(document.getElementById("h-step").textContent) &&
                                    document.getElementById("connection").className === "ok",
                               Number(devices), { timeout: 15000 });
    await page.waitForTimeout(3000);  // a few polls: the charts have lines
    await page.click("#fleet th[data-key=busy]");
    await page.screenshot({ path: out, fullPage: true });
  } catch (e) {
    errors.push(e.message);
  } finally {
    await browser.close();
  }
  if (errors.length) {
    console.log(errors.join("; "));
    process.exit(1);
  }
})();
