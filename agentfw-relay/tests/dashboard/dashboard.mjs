// Drives the relay's dashboard in headless Chromium: log in, disconnect a pair, quarantine
// an agent, switch report-only off, preview a threshold, and save a screenshot.
//
//   node dashboard.mjs RELAY_URL ADMIN_TOKEN SCREENSHOT_PATH PAIR_LABEL AGENT_LABEL
//
// Needs AGENTFW_CHROMIUM and AGENTFW_PLAYWRIGHT_DIR (see tests/browser/launch.mjs); prints
// one JSON line describing what it saw.

import { launch } from "../../../tests/browser/launch.mjs";

const [url, token, screenshot, pair, agentLabel] = process.argv.slice(2);
const { browser, close } = await launch();
const seen = {};
try {
  const page = await browser.newPage();
  const external = [];
  page.on("request", (r) => { if (!r.url().startsWith(url)) external.push(r.url()); });
  page.setDefaultTimeout(10000);

  await page.goto(`${url}/admin`);
  await page.getByTestId("token").fill("not-the-token");
  await page.getByTestId("login").click();
  await page.locator("#error").filter({ hasText: "not the admin token" }).waitFor();
  await page.getByTestId("token").fill(token);
  await page.getByTestId("login").click();

  const row = page.locator(`[data-testid=conversation][data-pair="${pair}"]`);
  await row.waitFor();
  seen.before = await row.getByTestId("state").innerText();
  seen.lastRefusal = await page.locator("[data-testid=conversation] [data-testid=last-refusal]").allInnerTexts();

  // One click disconnects the pair; live updates show it.
  await row.getByTestId("disconnect").click();
  await row.getByTestId("state").filter({ hasText: "Disconnected" }).waitFor();
  seen.afterDisconnect = await row.getByTestId("state").innerText();

  // One click quarantines an agent.
  const agent = page.locator(`[data-testid=agent][data-label="${agentLabel}"]`);
  await agent.getByTestId("quarantine").click();
  await agent.getByTestId("lift").waitFor();
  seen.quarantined = true;

  // Admission: preview a threshold, then leave report-only mode.
  await page.getByTestId("threshold").fill("2.5");
  await page.getByTestId("preview").click();
  await page.getByTestId("preview-result").filter({ hasText: "keeps out" }).waitFor();
  seen.preview = await page.getByTestId("preview-result").innerText();
  await page.getByTestId("report-only").uncheck();
  await page.locator("#admission-summary").filter({ hasText: "Mode: enforce" }).waitFor();
  seen.mode = "enforce";

  // The HttpOnly session cookie is invisible to scripts.
  seen.cookieVisibleToScripts = await page.evaluate(() => document.cookie.includes("afw_session"));
  seen.external = external;
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(JSON.stringify(seen));
} finally {
  await close();
}
