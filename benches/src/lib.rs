//! Shared inputs for the agentfw benchmarks.

pub mod adversarial;

/// About 1 KiB of ordinary ASCII developer chat.
pub fn ascii_1k() -> String {
    let para = "The /health endpoint should return 200 with {\"status\":\"ok\"} when every dependency answers \
within 250 ms, and 503 with a list of failing checks otherwise. I changed the handler in src/health.rs, \
added a test in tests/health.rs and ran `cargo test --workspace`: 212 passed, 0 failed. Next I will look at \
the retry budget in the client, because the p99 latency went from 180 ms to 420 ms after the last deploy.\n";
    fill(para, 1024)
}

/// About 1 KiB mixing Latin with accents, Cyrillic, CJK, emoji and fullwidth letters.
pub fn mixed_1k() -> String {
    let para = "Déploiement terminé ✅ — the Ünïcode build passed. Проверка завершена, всё хорошо. \
部署已完成，请检查日志。 ｆｕｌｌｗｉｄｔｈ text and 𝐛𝐨𝐥𝐝 letters, zero\u{200B}width joins 👍🏽.\n";
    fill(para, 1024)
}

/// `para` repeated, with a counter so no two lines are identical, cut to about `bytes`.
pub fn fill(para: &str, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + para.len());
    let mut i = 0;
    while out.len() < bytes {
        out.push_str(&format!("{i}. {para}"));
        i += 1;
    }
    let mut end = bytes.min(out.len());
    while !out.is_char_boundary(end) {
        end -= 1;
    }
    out.truncate(end);
    out
}
