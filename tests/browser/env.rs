//! The headless browser for the dashboards' browser tests (the relay's and the daemon's),
//! included by both with `#[path]`.

/// `AGENTFW_CHROMIUM` and `AGENTFW_PLAYWRIGHT_DIR` (`scripts/browser-for-tests` sets them).
/// Without them the test fails under CI (`CI=true`) and is skipped locally.
#[allow(clippy::disallowed_methods)] // The test reads its environment.
pub fn browser() -> Option<(String, String)> {
    let get = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    match (get("AGENTFW_CHROMIUM"), get("AGENTFW_PLAYWRIGHT_DIR")) {
        (Some(c), Some(p)) => Some((c, p)),
        _ if get("CI").as_deref() == Some("true") => panic!(
            "AGENTFW_CHROMIUM and AGENTFW_PLAYWRIGHT_DIR are not set, and CI must run the dashboard test: \
             run `source scripts/browser-for-tests` first"
        ),
        _ => {
            eprintln!("skipped: no headless browser (run `source scripts/browser-for-tests`)");
            None
        }
    }
}
