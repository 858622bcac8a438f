// Drives the daemon's dashboard (`agentfw dashboard`) in headless Chromium, step by step
// with the Rust test that makes the agents talk:
//
//   node dashboard.mjs URL TEAM_PNG CONVERSATION_PNG
//
// Prints {"ready": true} once the page shows the team. Then reads one JSON line per step
// from stdin: {"step": NAME, "selector": CSS} waits for the selector and prints
// {"step": NAME, "ms": how long it took}; {"step": "finish"} checks what the page holds,
// saves both screenshots, prints what it saw and exits.
//
// Needs AGENTFW_CHROMIUM and AGENTFW_PLAYWRIGHT_DIR (see tests/browser/launch.mjs).

import { createInterface } from "node:readline";
import { launch } from "../../../tests/browser/launch.mjs";

const [url, teamPng, conversationPng] = process.argv.slice(2);
const origin = new URL(url).origin;
const { browser, close } = await launch();
const say = (o) => console.log(JSON.stringify(o));
try {
  const page = await browser.newPage();
  const external = [];
  page.on("request", (r) => { if (!r.url().startsWith(origin)) external.push(r.url()); });
  page.on("pageerror", (e) => console.error("page error:", e.message));
  page.setDefaultTimeout(10000);

  await page.goto(url);
  await page.locator("#live.on").waitFor();
  await page.locator("[data-testid=agent]").nth(3).waitFor();
  const tokenLeft = new URL(page.url()).search !== "";
  say({ ready: true, tokenLeft });

  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    const { step, selector } = JSON.parse(line);
    if (step === "finish") break;
    const start = performance.now();
    try {
      await page.locator(selector).first().waitFor({ timeout: 5000 });
      say({ step, ms: Math.round(performance.now() - start) });
    } catch (e) {
      say({ step, error: String(e.message || e) });
    }
  }

  const seen = { tokenLeft };
  const q = page.locator("[data-testid=quarantine][data-label='api (codex)']");
  seen.liftCommand = await q.getByTestId("command").innerText();
  seen.quarantineReason = await q.locator("td.reason").innerText();
  seen.remembered = await page.locator("[data-testid=remembered]").count();

  // The hostile label: the team row whose project is the folder name full of markup.
  const evil = page.locator("[data-testid=agent]").filter({ hasText: "onerror" });
  seen.evilLabel = await evil.getByTestId("label").innerText();
  seen.pwned = await page.evaluate(() => window.__pwned !== undefined);
  seen.images = await page.locator("img").count();
  seen.boldInTeam = await page.locator("[data-testid=team] b").count();
  seen.cookieVisibleToScripts = await page.evaluate(() => document.cookie.includes("afw_dashboard"));
  // Trusted Types: assigning a string to innerHTML throws.
  seen.innerHtmlBlocked = await page.evaluate(() => {
    try { document.createElement("div").innerHTML = "<b>x</b>"; return false; } catch (e) { return true; }
  });
  seen.secretAnywhere = (await page.locator("body").innerText()).includes("ghp_");
  await page.screenshot({ path: teamPng, fullPage: true });

  // The conversation between web and api: its timeline, limits and commands.
  await page.locator("[data-testid=conversations] [data-testid=conversation]")
    .filter({ hasText: "web (claude)" }).filter({ hasText: "api (codex)" }).first().click();
  await page.locator("[data-testid=timeline] [data-testid=decision]").first().waitFor();
  seen.timeline = await page.getByTestId("timeline").innerText();
  seen.teamShownInConversation = await page.locator("#team-view").isVisible();
  seen.allowCommand = await page.locator("#conversation-commands [data-testid=command]").first().innerText();
  seen.secretAnywhere ||= (await page.locator("body").innerText()).includes("ghp_");
  await page.screenshot({ path: conversationPng, fullPage: true });
  seen.external = external;
  say(seen);
} finally {
  await close();
}
