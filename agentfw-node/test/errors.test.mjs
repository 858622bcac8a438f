// Each kind of core error reaches JavaScript with its stable `err.code`.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const af = createRequire(import.meta.url)('../index.js')
const T0 = 1_796_047_500_000
const WEB = { id: 'claude:1:1', kind: 'claude', project: 'web' }
const API = { id: 'codex:2:2', kind: 'codex', project: 'api' }
const KEYS = af.Keys.generateForTests(1, { now: T0 })
const OTHER = af.Keys.generateForTests(2, { now: T0 })
const SIGNER = af.Signer.generateForTests(1)

const cases = [
  ['bad stage', () => af.scan('x', { on: 'sideways' }), 'input.invalid'],
  ['bad config', () => new af.Firewall({ limits: { max_turns: 'x' } }), 'input.invalid'],
  ['bad admin action', () => new af.Firewall().admin({ action: 'dance' }), 'input.invalid'],
  ['bad secret', () => af.Signer.fromSecret(Buffer.from('short')), 'input.invalid'],
  ['time before 1970', () => af.messageId(-1), 'input.invalid'],
  ['message sent before 1970', () => {
    const fw = new af.Firewall()
    fw.deliver({ ...fw.send(WEB, API, 'x', { now: T0 }).message, sentAt: -1 }, T0)
  }, 'input.invalid'],
  ['negative seed', () => af.Keys.generateForTests(-1), 'input.invalid'],
  ['negative replay window', () => new af.ReplayCache({ maxAgeMs: -1 }), 'input.invalid'],
  ['negative verifier skew', () => new af.Verifier('x', { maxSkewMs: -5 }), 'input.invalid'],
  ['rule folder without rules', () => af.Policy.fromFiles([mkdtempSync(join(tmpdir(), 'agentfw-'))]), 'io.read'],
  ['not one character', () => af.isInvisible('ab'), 'input.invalid'],
  ['rules do not compile', () => af.Policy.fromText('id: ['), 'policy.invalid'],
  ['bad cases', () => af.Policy.default().test('cases: 3'), 'policy.invalid'],
  ['bad message id', () => af.fence('x', 'nope', 'b'), 'message.bad_id'],
  ['bad reply id', () => new af.Firewall().send(WEB, API, 'x', { replyTo: 'nope' }), 'message.bad_id'],
  ['binary body', () => new af.Firewall().send(WEB, API, Buffer.from([0xff, 0xfe])), 'message.invalid_utf8'],
  ['not a bundle', () => af.PublicBundle.parse('hello'), 'keys.not_a_bundle'],
  ['future bundle', () => af.PublicBundle.parse('agentfw-pub-v9 a b c'), 'keys.unsupported_version'],
  ['not a key file', () => af.Keys.fromKeyFile('hello'), 'keys.not_a_key_file'],
  ['key file not utf-8', () => af.Keys.fromKeyFile(Buffer.from([0xff])), 'keys.not_utf8'],
  ['key file bad line', () => af.Keys.fromKeyFile('agentfw-keys-v1\nnonsense'), 'keys.bad_line'],
  ['key file unknown field', () => af.Keys.fromKeyFile('agentfw-keys-v1\ncolour: red'), 'keys.unknown_field'],
  ['key file missing field', () => af.Keys.fromKeyFile('agentfw-keys-v1\n'), 'keys.missing_field'],
  ['not a rotation', () => af.Rotation.parse('hello'), 'keys.not_a_rotation'],
  ['bad device id', () => new af.Keyring().revoke('xyz'), 'keys.bad_device_id'],
  ['unknown device', () => new af.Keyring().revoke(OTHER.device), 'keys.unknown_device'],
  [
    'retired device',
    () => {
      const ring = new af.Keyring()
      ring.trust(OTHER.public)
      ring.revoke(OTHER.device, T0)
      ring.trust(OTHER.public)
    },
    'keys.retired',
  ],
  ['bad public key', () => new af.Verifier('x').trust(Buffer.from([1, 2, 3])), 'keys.bad_key'],
  ['bad content type', () => af.seal(KEYS, OTHER.public, 'x', { contentType: '' }), 'seal.bad_content_type'],
  ['body too large', () => af.seal(KEYS, OTHER.public, 'xx', { maxPlaintext: 1 }), 'seal.too_large'],
  ['truncated envelope', () => af.envelopeHeader(Buffer.from('AFWE')), 'open.truncated'],
  ['not an envelope', () => af.envelopeHeader(Buffer.concat([Buffer.from('NOPE'), Buffer.alloc(2000)])), 'open.malformed'],
  ['envelope too large', () => af.envelopeHeader(Buffer.alloc(100_000)), 'open.too_large'],
  [
    'unknown sender',
    () => af.open(OTHER, new af.Keyring(), new af.ReplayCache(), af.seal(KEYS, OTHER.public, 'x', { now: T0 }), { now: T0 }),
    'open.unknown_sender',
  ],
  ['bad executor', () => SIGNER.sign('plan', ''), 'handoff.bad_executor_name'],
  ['truncated hand-off', () => new af.Verifier('x').verify(Buffer.from('AFWH')), 'handoff.truncated'],
  ['not a hand-off', () => new af.Verifier('x').verify(Buffer.concat([Buffer.from('NOPE'), Buffer.alloc(64)])), 'handoff.malformed'],
  ['unknown signer', () => new af.Verifier('x').verify(SIGNER.sign('plan', 'x', { now: T0 }), T0), 'handoff.unknown_signer'],
  [
    'wrong executor',
    () => {
      const v = new af.Verifier('executor-b')
      v.trust(SIGNER.verifyingKey)
      v.verify(SIGNER.sign('plan', 'executor-a', { now: T0 }), T0)
    },
    'handoff.wrong_executor',
  ],
  ['bad signer id', () => new af.Verifier('x').distrust('zz'), 'handoff.bad_signer_id'],
  ['bad inventory', () => new af.Admission('{'), 'admission.inventory'],
  ['bad mode', () => new af.Admission(null, { mode: 'loud' }), 'admission.mode'],
  ['bad threshold', () => af.parseThreshold('severe'), 'admission.threshold'],
  ['bad score', () => new af.Admission(null, { threshold: 11 }), 'admission.score'],
  ['bad component', () => new af.Admission().except('github'), 'admission.component_id'],
  ['bad harness file', () => af.configuredServers('claude_project', '[]'), 'admission.harness_config'],
  ['bad scanner report', () => af.importCiscoMcpScanner('[{'), 'admission.scanner_report'],
  ['bad snapshot', () => af.Firewall.restore('{}'), 'snapshot.invalid'],
  ['bad keyring', () => af.Keyring.fromJson('[1]'), 'snapshot.invalid'],
  ['bad replay cache', () => af.ReplayCache.fromJson('{}'), 'snapshot.invalid'],
  ['bad nonces', () => new af.Verifier('x').restoreNonces('{}'), 'snapshot.invalid'],
  ['missing rules folder', () => af.Policy.fromFiles(['/nonexistent/rules']), 'io.read'],
]

for (const [note, call, code] of cases) {
  test(`error: ${note}`, () => {
    assert.throws(call, (e) => {
      assert.ok(e instanceof Error)
      assert.equal(e.code, code)
      assert.ok(e.message.length > 0)
      return true
    })
  })
}
