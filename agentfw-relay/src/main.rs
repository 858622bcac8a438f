//! `agentfw-relay`: the relay server and its admin commands.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use agentfw_relay::audit::{AuditQuery, parse_time, to_jsonl};
use agentfw_relay::server::{create_invite, reset_admin_token, tls};
use agentfw_relay::store::Store;
use agentfw_relay::{Config, Relay, clock};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "agentfw-relay",
    version,
    about = "The agentfw relay: sealed envelopes between devices, central admission and blocks, the audit log and the admin dashboard"
)]
struct Cli {
    /// `sqlite://PATH` or `postgres://USER@HOST/DB`. Default: a SQLite file in the relay's
    /// data directory (`AGENTFW_RELAY_HOME`, else the per-user data directory).
    #[arg(long, global = true, env = "AGENTFW_RELAY_DATABASE_URL")]
    database_url: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the relay in the foreground.
    Serve {
        #[arg(long, default_value = "127.0.0.1:8470")]
        listen: SocketAddr,
        /// The admin credential. Without it the relay keeps the one it has, or makes one at
        /// first start and prints it once.
        #[arg(long, env = "AGENTFW_RELAY_ADMIN_TOKEN", hide_env_values = true)]
        admin_token: Option<String>,
        /// Envelopes a device may submit a second (sustained).
        #[arg(long, default_value_t = 100)]
        rate: u32,
        /// Envelopes a device may submit at once above the rate.
        #[arg(long, default_value_t = 1000)]
        burst: u32,
        /// The largest message body, in bytes.
        #[arg(long, default_value_t = 64 * 1024)]
        max_message_bytes: usize,
        /// Days to keep audit records.
        #[arg(long, default_value_t = 90)]
        retention_days: u64,
        /// Mark the admin cookie `Secure` (when a proxy in front serves the relay over
        /// HTTPS; with --tls-cert it is marked anyway).
        #[arg(long)]
        secure_cookie: bool,
        /// Serve TLS with this certificate chain (PEM, the relay's certificate first), so
        /// that devices connect with https:// and no proxy is needed.
        #[arg(long, value_name = "FILE", requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// The private key of --tls-cert (PEM).
        #[arg(long, value_name = "FILE", requires = "tls_cert")]
        tls_key: Option<PathBuf>,
    },
    /// Make a one-time invite for a device; prints the token.
    Invite {
        /// A note for the admin (whose device this is for).
        #[arg(long, default_value = "")]
        note: String,
        /// Days the invite stays valid.
        #[arg(long, default_value_t = 7)]
        expires_days: u64,
    },
    /// Query the audit log (metadata only).
    Audit {
        /// Sender: an agent id or label.
        #[arg(long)]
        from: Option<String>,
        /// Recipient: an agent id or label.
        #[arg(long)]
        to: Option<String>,
        /// Since: 2026-04-01, 2026-04-01T10:00:00Z, or a span back from now (24h, 7d).
        #[arg(long)]
        since: Option<String>,
        #[arg(long)]
        until: Option<String>,
        /// allow, deny, hold or warn.
        #[arg(long)]
        verdict: Option<String>,
        #[arg(long, default_value_t = 10_000)]
        limit: usize,
        /// One JSON array.
        #[arg(long, conflicts_with = "jsonl")]
        json: bool,
        /// One JSON object a line (export).
        #[arg(long)]
        jsonl: bool,
    },
    /// Make a new admin token (the old one stops working); prints it.
    AdminToken,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("AGENTFW_RELAY_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn")),
        )
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("agentfw-relay: cannot start: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agentfw-relay: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> Result<(), String> {
    let database_url = match cli.database_url {
        Some(url) => url,
        None => default_database_url()?,
    };
    match cli.command {
        Command::Serve {
            listen,
            admin_token,
            rate,
            burst,
            max_message_bytes,
            retention_days,
            secure_cookie,
            tls_cert,
            tls_key,
        } => {
            let tls = match (tls_cert, tls_key) {
                (Some(cert), Some(key)) => Some(tls::load(&cert, &key).map_err(|e| e.to_string())?),
                _ => None,
            };
            let mut config = Config {
                listen,
                database_url,
                admin_token,
                rate_per_second: rate,
                burst,
                secure_cookie,
                tls,
                ..Config::default()
            };
            config.limits.max_plaintext = max_message_bytes;
            config.retention = Duration::from_secs(retention_days.saturating_mul(86_400));
            let relay = Relay::start(config).await.map_err(|e| e.to_string())?;
            if let Some(token) = relay.generated_admin_token() {
                eprintln!("admin token (shown once; keep it): {token}");
            }
            eprintln!("dashboard: {}/admin", relay.url());
            shutdown_signal().await;
            eprintln!("shutting down");
            relay.shutdown().await;
            Ok(())
        }
        Command::Invite { note, expires_days } => {
            let store = Store::open(&database_url).await.map_err(|e| e.to_string())?;
            let token = create_invite(&store, Duration::from_secs(expires_days.saturating_mul(86_400)), &note)
                .await
                .map_err(|e| e.to_string())?;
            println!("{token}");
            eprintln!(
                "one-time invite, valid {expires_days} days: on the device, run `agentfw join RELAY_URL {token}`"
            );
            store.close().await;
            Ok(())
        }
        Command::Audit { from, to, since, until, verdict, limit, json, jsonl } => {
            let now = clock::now();
            let time = |s: Option<String>| s.map(|s| parse_time(&s, now)).transpose();
            let query = AuditQuery { from, to, since: time(since)?, until: time(until)?, verdict, limit };
            let store = Store::open(&database_url).await.map_err(|e| e.to_string())?;
            let records = store.audit(&query).await.map_err(|e| e.to_string())?;
            store.close().await;
            if jsonl {
                print!("{}", to_jsonl(&records));
            } else if json {
                println!("{}", serde_json::to_string_pretty(&records).map_err(|e| e.to_string())?);
            } else {
                for r in &records {
                    let why = match (&r.code, &r.rule, &r.reason) {
                        (_, Some(rule), Some(reason)) => format!("rule {rule}: {reason}"),
                        (Some(code), None, Some(reason)) => format!("{code}: {reason}"),
                        (Some(code), _, None) => code.clone(),
                        _ => String::new(),
                    };
                    println!(
                        "{}  {:<10} {:<10} {} -> {}  {} B  {}  {}",
                        r.at,
                        r.stage,
                        r.source.get(..10).unwrap_or(&r.source),
                        r.from_label,
                        r.to_label,
                        r.size,
                        r.verdict,
                        why
                    );
                }
                eprintln!("{} record(s)", records.len());
            }
            Ok(())
        }
        Command::AdminToken => {
            let store = Store::open(&database_url).await.map_err(|e| e.to_string())?;
            let token = reset_admin_token(&store).await.map_err(|e| e.to_string())?;
            store.close().await;
            println!("{token}");
            eprintln!("the previous admin token no longer works; restart running relays to pick this one up");
            Ok(())
        }
    }
}

/// `sqlite://<data dir>/relay.db`, creating the directory.
#[allow(clippy::disallowed_methods)] // The binary reads its environment once, here.
fn default_database_url() -> Result<String, String> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let dir = var("AGENTFW_RELAY_HOME")
        .or_else(|| var("XDG_DATA_HOME").map(|d| d.join("agentfw-relay")))
        .or_else(|| var("HOME").map(|h| h.join(".local/share/agentfw-relay")))
        .ok_or("no data directory: set AGENTFW_RELAY_HOME or give --database-url")?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(format!("sqlite://{}", dir.join("relay.db").display()))
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
