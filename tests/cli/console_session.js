// One headless Chromium session on the console page (playwright-core), for
// the browser checks: `check(page, errors)` drives the page and pushes what
// is wrong onto `errors`; a script error on the page or a throw counts too.
// Prints the problems and exits 1 if there are any.
"use strict";
const { chromium } = require("playwright-core");

module.exports.with_console_page = async check => {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
                                          args: ["--no-sandbox"] });
  const errors = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.on("pageerror", e => errors.push(e.message));
    await check(page, errors);
  } catch (e) {
    errors.push(e.message.split("\n")[0]);
  } finally {
    await browser.close();
  }
  if (errors.length) {
    console.log(errors.join("; "));
    process.exit(1);
  }
};
