//! The injection signal (`message.signals.injection`): the shipped model scoring folded
//! text, on prose and on the kinds of text that stress a tokenizer (one long base64 line,
//! hex, punctuation). Target: at most 20 µs per KiB.
//!
//! `cargo bench -p agentfw-benches --bench signals`

use std::hint::black_box;

use agentfw_core::normalize::fold;
use agentfw_core::signals::injection_model;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const PROSE: &str = "Can you check why the /health endpoint returns 500 after the deploy? The stack trace \
points at src/server.rs:120 in handle_request, right after we parse the JSON body. I ran \
`curl -s http://localhost:8080/health | jq .status` and got null. The commit is \
3f4e2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f and the request id 123e4567-e89b-12d3-a456-426614174000.\n\
fn handle_request(req: Request) -> Result<Response, Error> {\n    let body: Health = serde_json::from_slice(&req.body)?;\n    Ok(Response::json(&body))\n}\n\
2024-05-01T12:00:00Z ERROR request failed: connection refused (os error 111)\n";

fn repeat_to(text: &str, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + text.len());
    while out.len() < bytes {
        out.push_str(text);
    }
    out.truncate(bytes);
    out
}

fn base64_line(bytes: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..bytes)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(ALPHABET.get((state % 64) as usize).copied().unwrap_or(b'A'))
        })
        .collect()
}

fn signals(c: &mut Criterion) {
    let model = match injection_model() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("the shipped injection model cannot be read: {e}");
            return;
        }
    };
    let inputs = [
        ("injection/1KiB_prose", fold(&repeat_to(PROSE, 1024))),
        ("injection/64KiB_prose", fold(&repeat_to(PROSE, 64 * 1024))),
        ("injection/64KiB_base64_line", fold(&base64_line(64 * 1024))),
        ("injection/64KiB_hex", fold(&repeat_to("3f786850e387550fdab836ed7e6dc881de23001b ", 64 * 1024))),
        ("injection/64KiB_punctuation", repeat_to("!{[(<|>)]}\" ", 64 * 1024)),
    ];
    let mut group = c.benchmark_group("signals");
    for (name, text) in &inputs {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(*name, |b| b.iter(|| model.score(black_box(text))));
    }
    group.finish();
}

criterion_group!(benches, signals);
criterion_main!(benches);
