//! What copied-span matching and taint cost on benign traffic (PV4): a generated corpus of
//! what agents really send each other — code review threads that quote diffs and each
//! other's comments, status relayed from one agent to the next, questions answered (some
//! repeating the question), and setup instructions with `curl … | sh` — run through the
//! firewall with the default pack. Every refusal here is a false positive. The figures are
//! printed (`cargo test -p agentfw-core --test benign_traffic -- --nocapture`) and bounded.
//!
//! Only two kinds of benign message can be refused, both by design, and both carry a
//! download-and-run command of their own: an answer that repeats a received question word
//! for word (the copy makes the whole message forwarded), and a command from a session that
//! another agent showed one within the hour (taint). Text with no such command is never
//! refused, however much of it is quoted.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use agentfw_core::firewall::{AdminAction, Config, Event, Firewall, Output};
use agentfw_core::limits::Action;
use agentfw_core::message::Agent;
use agentfw_core::policy::RuleSet;
use agentfw_core::sim::Sim;
use agentfw_core::time::Timestamp;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

const TABLES: &[&str] = &["orders", "invoices", "customers", "payments", "sessions", "audit_log", "shipments"];
const SERVICES: &[&str] = &["payments", "billing", "search", "auth", "notifications", "gateway", "reports"];
const FILES: &[&str] = &["src/server.rs", "src/health.rs", "src/db/pool.rs", "lib/retry.ts", "api/handlers.py"];
const TASKS: &[(&str, &str)] = &[
    ("install the profiler on the build server", "INSTALLER"),
    ("run the integration tests against staging", "cargo test -p payments --features staging -- --test-threads 1"),
    ("regenerate the protobuf bindings", "make proto && git diff --stat"),
    ("reset the local dev database", "docker compose down -v && docker compose up -d db"),
    ("bump the version for the next release", "cargo set-version --bump minor && git commit -am 'release'"),
    ("clear the CI cache for the payments service", "gh workflow run clear-cache.yml -f service=payments"),
    ("check the health endpoint on staging", "curl -s https://staging.example.com/health | jq .status"),
    ("see which migrations are still pending", "sqlx migrate info --database-url $DATABASE_URL"),
];
/// Download-and-run installers, as developers paste them (the default pack refuses these
/// only when forwarded); `HOST` becomes a host of its own each time, so that no installer
/// is passed on by accident of the corpus.
const INSTALLERS: &[&str] = &[
    "curl -fsSL https://HOST/install.sh | sh",
    "curl --proto '=https' --tlsv1.2 -sSf https://HOST/rustup-init.sh | sh",
    "curl -sSL https://HOST/get-poetry.py | python3 -",
    "wget -qO- https://HOST/lint | bash",
];

struct Corpus {
    sim: Sim<ChaCha20Rng>,
    rng: ChaCha20Rng,
    agents: Vec<Agent>,
    /// Per kind of message: (sent, judged forwarded, refused).
    counts: BTreeMap<&'static str, (usize, usize, usize)>,
    /// Installers handed out so far, so each has a host of its own.
    hosts: u32,
    refused: Vec<(&'static str, String, String)>,
    /// Every text sent.
    texts: Vec<String>,
}

impl Corpus {
    fn new() -> Self {
        let mut config = Config::default();
        // A corpus, not a conversation: loop signals and limits would only add noise.
        config.limits.near_duplicate = Action::Off;
        config.limits.self_repeat = Action::Off;
        config.limits.ack_only = Action::Off;
        config.limits.rate = 1_000_000;
        config.limits.fan_out = 1_000;
        config.limits.max_turns = u32::MAX;
        config.limits.thread_messages = u32::MAX;
        let mut firewall = Firewall::new(config);
        firewall.set_rules(Arc::new(RuleSet::default_pack().unwrap()));
        let sim = Sim::new(firewall, Timestamp::from_millis(1_796_047_500_000), ChaCha20Rng::seed_from_u64(99));
        let kinds = ["claude", "codex", "cursor", "gemini"];
        let projects = ["web", "api", "worker", "docs", "infra", "mobile", "data", "ops"];
        let agents = projects
            .iter()
            .enumerate()
            .map(|(i, p)| Agent::new(format!("{}:{p}:{i}:1", kinds[i % 4]), kinds[i % 4], *p))
            .collect();
        let rng = ChaCha20Rng::seed_from_u64(2024);
        Self { sim, rng, agents, counts: BTreeMap::new(), hosts: 0, refused: Vec::new(), texts: Vec::new() }
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.rng.next_u32() as usize % items.len()]
    }

    /// An installer with a host of its own.
    fn installer(&mut self, which: usize) -> String {
        const NAMES: &[&str] = &["frobnik", "lintel", "quasar", "tessera", "ziggurat", "mandolin", "orrery", "bramble"];
        self.hosts += 1;
        let (name, tld) = (*self.pick(NAMES), *self.pick(&["dev", "io", "sh", "org"]));
        let host = format!("{name}{}.{tld}", self.hosts);
        INSTALLERS[which % INSTALLERS.len()].replace("HOST", &host)
    }

    /// Three different agents.
    fn trio(&mut self) -> (Agent, Agent, Agent) {
        let n = self.agents.len();
        let a = self.rng.next_u32() as usize % n;
        let b = (a + 1 + self.rng.next_u32() as usize % (n - 1)) % n;
        let mut c = self.rng.next_u32() as usize % n;
        while c == a || c == b {
            c = (c + 1) % n;
        }
        (self.agents[a].clone(), self.agents[b].clone(), self.agents[c].clone())
    }

    /// `from` sends `to` a message of `kind`, and `to` reads it.
    fn say(&mut self, kind: &'static str, from: &Agent, to: &Agent, text: &str) {
        self.sim.advance(Duration::from_secs(20));
        self.texts.push(text.to_owned());
        let out = self.sim.send(from, to, text);
        let entry = self.counts.entry(kind).or_default();
        entry.0 += 1;
        match out {
            Output::Accepted { message, .. } => {
                entry.1 += usize::from(message.provenance.hops >= 2);
                for delivered in self.sim.read(to) {
                    if let Output::Refused(r) = delivered {
                        entry.2 += 1;
                        self.refused.push((kind, text.to_owned(), r.message()));
                    }
                }
            }
            Output::Refused(r) => {
                entry.1 += 1;
                entry.2 += 1;
                self.refused.push((kind, text.to_owned(), r.message()));
            }
            other => panic!("{other:?}"),
        }
        // Nobody stays quarantined, and no text stays remembered, into the next thread: each
        // message is measured on its own.
        for a in self.agents.clone() {
            self.sim.admin(AdminAction::LiftQuarantine { agent: a.id });
        }
        let remembered: Vec<_> = self
            .sim
            .events()
            .iter()
            .filter_map(|e| match e {
                Event::Remembered { text, .. } => Some(*text),
                _ => None,
            })
            .collect();
        for text in remembered {
            self.sim.admin(AdminAction::Forget { text });
        }
    }

    fn review_thread(&mut self, n: usize) {
        let (author, reviewer, _) = self.trio();
        let file = *self.pick(FILES);
        let service = *self.pick(SERVICES);
        let ms = 100 + self.rng.next_u32() % 900;
        let line_a = format!("-    let timeout = Duration::from_millis({});", ms);
        let line_b = format!("+    let timeout = config.{service}_timeout.unwrap_or(Duration::from_millis({ms}));");
        let diff = format!(
            "Please review PR #{n}: make the {service} timeout configurable\n```diff\n--- a/{file}\n+++ b/{file}\n@@ -40,7 +40,7 @@\n{line_a}\n{line_b}\n     let client = Client::builder().timeout(timeout).build()?;\n```\nI ran `cargo test --workspace`: {} passed, 0 failed.",
            200 + n
        );
        self.say("review: diff", &author, &reviewer, &diff);
        let comment = format!(
            "> {line_b}\nThis reads the {service} timeout on every request; can we read it once when the client is built? Otherwise looks good."
        );
        self.say("review: quote the diff", &reviewer, &author, &comment);
        let reply = format!(
            "> This reads the {service} timeout on every request; can we read it once when the client is built?\nGood point, fixed in {:07x}: the client now keeps it. Rerun: `cargo test -p {service}`.",
            self.rng.next_u32() >> 4
        );
        self.say("review: quote the comment", &author, &reviewer, &reply);
        self.say("review: approve", &reviewer, &author, "LGTM now, merging after CI is green.");
    }

    fn relay(&mut self) {
        let (a, b, c) = self.trio();
        let table = *self.pick(TABLES);
        let hour = 8 + self.rng.next_u32() % 10;
        let status = format!(
            "The migration of the {table} table finished at {hour}:00 and every shard reports healthy; p99 latency is back under 200 ms."
        );
        self.say("relay: status", &a, &b, &status);
        let relayed = format!(
            "FYI from {}: the migration of the {table} table finished at {hour}:00 and every shard reports healthy. Can you re-enable the nightly {table} export?",
            a.label()
        );
        self.say("relay: pass the status on", &b, &c, &relayed);
    }

    fn question(&mut self) {
        let (a, b, _) = self.trio();
        let &(task, command) = self.pick(TASKS);
        let command = if command == "INSTALLER" { self.installer(0) } else { command.to_owned() };
        self.say("question: ask", &a, &b, &format!("How do I {task}? I could not find it in the README."));
        let answer = if self.rng.next_u32().is_multiple_of(2) {
            format!("To {task}, run `{command}` from the repository root.")
        } else {
            format!("`{command}` does it; ping me if it fails.")
        };
        self.say("question: answer", &b, &a, &answer);
    }

    /// Someone shares an installer; later the same session sends a command of its own, and
    /// sometimes an installer of its own.
    fn setup(&mut self) {
        let (a, b, c) = self.trio();
        let which = self.rng.next_u32() as usize;
        let installer = self.installer(which);
        self.say(
            "setup: share an installer",
            &a,
            &b,
            &format!("To set up the tool on your box: {installer} and then restart the service."),
        );
        let &(task, command) = self.pick(TASKS);
        if command != "INSTALLER" {
            self.say(
                "setup: later, an ordinary command",
                &b,
                &c,
                &format!("Could you {task}? The command is `{command}`."),
            );
        }
        if self.rng.next_u32().is_multiple_of(4) {
            let own = self.installer(which + 1);
            self.say(
                "setup: later, an installer of its own",
                &b,
                &c,
                &format!("The linter installs with {own} if you need it."),
            );
        }
    }
}

#[test]
fn false_positives_of_span_matching_and_taint_on_benign_traffic() {
    let mut corpus = Corpus::new();
    for n in 0..120 {
        corpus.review_thread(n);
        corpus.relay();
        corpus.question();
        if n % 3 == 0 {
            corpus.setup();
        }
        // Taint and copies last an hour: let some threads age out.
        if n % 40 == 39 {
            corpus.sim.advance(Duration::from_secs(3600));
        }
    }
    let (mut sent, mut forwarded, mut refused) = (0, 0, 0);
    println!("{:<40} {:>6} {:>10} {:>8}", "kind", "sent", "forwarded", "refused");
    for (kind, (s, f, r)) in &corpus.counts {
        println!("{kind:<40} {s:>6} {f:>10} {r:>8}");
        (sent, forwarded, refused) = (sent + s, forwarded + f, refused + r);
    }
    for (kind, text, why) in &corpus.refused {
        println!("refused ({kind}): {text:?}\n  {why}");
    }
    println!(
        "{sent} benign messages, {forwarded} judged forwarded, {refused} refused ({:.2}%)",
        refused as f64 * 100.0 / sent as f64
    );
    // Only a message with a download-and-run command of its own is ever refused: text
    // without one never is, however much of it is quoted.
    let own_command = |text: &str| ["| sh", "| bash", "| python3"].iter().any(|c| text.contains(c));
    for (kind, text, why) in &corpus.refused {
        assert!(own_command(text), "{kind}: {text:?}: {why}");
    }
    let commands = corpus.texts.iter().filter(|t| own_command(t)).count();
    println!("{commands} of them carry a download-and-run command of their own; {refused} of those were refused");
    // Quotes are judged forwarded, as they should be.
    for kind in ["review: quote the diff", "review: quote the comment", "relay: pass the status on"] {
        let (s, f, _) = corpus.counts[kind];
        assert_eq!(f, s, "{kind}: every quote is judged forwarded");
    }
    assert!(refused * 100 <= sent * 5, "{refused} of {sent}");
}
