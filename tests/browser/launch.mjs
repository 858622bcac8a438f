// Headless Chromium for the dashboards' browser tests (the relay's and the daemon's), with a
// fresh profile each run. Needs AGENTFW_CHROMIUM (the browser) and AGENTFW_PLAYWRIGHT_DIR
// (node_modules holding playwright-core); `scripts/browser-for-tests` sets both.

import { createRequire } from "node:module";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// The browser context, and `close` to end it and remove its profile.
export async function launch() {
  const require = createRequire(join(process.env.AGENTFW_PLAYWRIGHT_DIR, "noop.js"));
  const { chromium } = require("playwright-core");
  const profile = mkdtempSync(join(tmpdir(), "agentfw-dashboard-"));
  // playwright passes the profile as --user-data-dir.
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.AGENTFW_CHROMIUM || "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1400, height: 1000 },
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  const close = async () => {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return { browser, close };
}
