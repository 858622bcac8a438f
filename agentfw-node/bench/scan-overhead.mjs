// Per-call time of `scan` on 1 KiB, to compare with the Rust call.
//
// The text and the call are those of the criterion benchmark `default_pack/1KiB_ascii`
// (benches/benches/policy.rs): the default pack, hops 2, stage `sending`. The overhead of
// the binding is this median minus criterion's median for that benchmark.
//
//   npm install ./agentfw-node                 # a release build
//   node agentfw-node/bench/scan-overhead.mjs
//   cargo bench -p agentfw-benches --bench policy -- default_pack/1KiB_ascii
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const af = require(process.env.AGENTFW_MODULE || '../index.js')

const ASCII =
  'Can you check why the /health endpoint returns 500 after the deploy? The stack trace ' +
  'points at src/server.rs:120 in handle_request, right after we parse the JSON body. I ran ' +
  '`curl -s http://localhost:8080/health | jq .status` and got null. The commit is ' +
  '3f4e2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f and the request id 123e4567-e89b-12d3-a456-426614174000.\n' +
  'fn handle_request(req: Request) -> Result<Response, Error> {\n' +
  '    let body: Health = serde_json::from_slice(&req.body)?;\n    Ok(Response::json(&body))\n}\n' +
  '2024-05-01T12:00:00Z ERROR request failed: connection refused (os error 111)\n'
const TEXT = ASCII.repeat(Math.floor(1024 / ASCII.length) + 1).slice(0, 1024)
const NOW = 1_700_000_000_000

const rules = af.Policy.default()
const options = { hops: 2, rules, now: NOW }
if (af.scan(TEXT, options).verdict !== 'allow') throw new Error('unexpected verdict')
const batch = 2000
const rounds = 41
for (let i = 0; i < 3 * batch; i++) af.scan(TEXT, options)
const samples = []
for (let r = 0; r < rounds; r++) {
  const start = process.hrtime.bigint()
  for (let i = 0; i < batch; i++) af.scan(TEXT, options)
  samples.push(Number(process.hrtime.bigint() - start) / batch / 1000)
}
samples.sort((a, b) => a - b)
console.log(`node scan 1KiB: median ${samples[rounds >> 1].toFixed(2)} µs/call (min ${samples[0].toFixed(2)}, ${rounds}x${batch} calls)`)
