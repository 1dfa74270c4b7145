// Drives the console page in headless Chromium (playwright-core) during a
// live run and checks what an operator sees and does: a row per device; the
// step counter and the loss chart move on between two reads; the device the
// churn schedule kills turns dead; a wrong token is refused; a drain clicked
// on the page (with the token) takes the device out of every plan, as
// /api/state says. No script error, nothing fetched from elsewhere. Writes a
// screenshot. Prints "ok" lines, or the problems and exits 1.
// Usage: node console_browser.js URL OUT.png DEVICES DEAD_DEVICE DRAIN_DEVICE TOKEN
// (DEAD_DEVICE -1: no death is waited for; DRAIN_DEVICE -1: no drain.)
"use strict";
const { with_console_page } = require("./console_session.js");

(async () => {
  const [url, out, devices, dead, drain, token] = process.argv.slice(2);
  const row_state = (page, id) =>
    page.locator(`#fleet tr[data-device="${id}"] td.state`).textContent({ timeout: 1000 }).catch(() => "");
  await with_console_page(async (page, errors) => {
    // Failed loads are judged by their address below; the browser's own
    // /favicon.ico (a 404 here) is not the page's doing, nor is a control
    // the test expects to be refused.
    page.on("console", m => {
      if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(m.text());
    });
    page.on("response", r => {
      if (r.status() >= 400 && !r.url().endsWith("/favicon.ico") && !r.url().includes("/api/control/"))
        errors.push(r.status() + " for " + r.url());
    });
    page.on("request", r => { if (!r.url().startsWith(url)) errors.push("fetched " + r.url()); });
    await page.goto(url);
    await page.waitForFunction(n => document.querySelectorAll("#fleet tbody tr").length === n &&
                                    /^[0-9]+$/.test(document.getElementById("h-step").textContent) &&
                                    document.getElementById("connection").className === "ok",
                               Number(devices), { timeout: 15000 });
    console.log("ok: a row per device (" + devices + ")");

    const read = () => page.evaluate(() => ({ step: Number(document.getElementById("h-step").textContent),
                                              loss: document.getElementById("c-loss").toDataURL() }));
    const first = await read();
    await page.waitForTimeout(2500);
    const second = await read();
    if (!(second.step > first.step)) errors.push(`the step counter stayed at ${first.step}`);
    else if (second.loss === first.loss) errors.push("the loss chart did not change");
    else console.log(`ok: the step counter (${first.step} -> ${second.step}) and the loss chart advance`);

    if (Number(dead) >= 0) {
      await page.waitForFunction(id => {
        const cell = document.querySelector(`#fleet tr[data-device="${id}"] td.state`);
        return cell && cell.textContent === "dead";
      }, dead, { timeout: 30000 });
      console.log(`ok: device ${dead}, killed by the churn schedule, shows dead`);
    }

    if (Number(drain) >= 0) {
      const button = `#fleet tr[data-device="${drain}"] button.drain`;
      await page.fill("#token", "not-" + token);
      await page.click(button);
      await page.waitForFunction(() => /401/.test(document.getElementById("control-result").textContent),
                                 null, { timeout: 5000 });
      if (await row_state(page, drain) !== "alive") errors.push("a refused drain changed the device");
      else console.log("ok: a drain with a wrong token is refused (401) and changes nothing");
      await page.fill("#token", token);
      await page.click(button);
      await page.waitForFunction(() => /draining/.test(document.getElementById("control-result").textContent),
                                 null, { timeout: 5000 });
      // The engines re-place their plans at the next step: poll /api/state.
      let doc = null, planned = [];
      for (let i = 0; i < 50; ++i) {
        doc = await (await page.request.get(url + "api/state")).json();
        planned = doc.plans.filter(p => p.devices.includes(Number(drain)));
        const device = doc.fleet.devices.find(d => d.id === Number(drain));
        if (device && device.state === "draining" && planned.length === 0 && doc.plans.some(p => !p.local)) break;
        await page.waitForTimeout(200);
      }
      const device = doc.fleet.devices.find(d => d.id === Number(drain));
      if (!device || device.state !== "draining") errors.push(`device ${drain} is not draining: ${JSON.stringify(device)}`);
      else if (planned.length) errors.push(`device ${drain} is still in ${planned.length} plan(s)`);
      else if (!doc.plans.some(p => !p.local)) errors.push("no plan uses a device: the drain proves nothing");
      else if (!doc.events.some(e => e.kind === "drain" && e.device === Number(drain)))
        errors.push("the event log lacks the drain");
      else console.log(`ok: the drain from the page takes device ${drain} out of every plan ` +
                       `(${doc.plans.filter(p => !p.local).length} split plans)`);
      await page.waitForFunction(id => {
        const cell = document.querySelector(`#fleet tr[data-device="${id}"] td.state`);
        return cell && cell.textContent === "draining";
      }, drain, { timeout: 5000 });
    }
    await page.waitForTimeout(1200);  // one more poll: the page shows it all
    await page.screenshot({ path: out, fullPage: true });
  });
})();
