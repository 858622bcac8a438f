// Builds the native addon with cargo and copies it to `agentfw.node` beside index.js.
// `npm install` runs this. AGENTFW_NODE_PROFILE=dev gives a faster debug build.
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(dirname(fileURLToPath(import.meta.url)))
const profile = process.env.AGENTFW_NODE_PROFILE || 'release'
const targetDir = process.env.CARGO_TARGET_DIR || join(here, '..', 'target')
execFileSync('cargo', ['build', '--quiet', '--manifest-path', join(here, 'Cargo.toml'), '--profile', profile, '--target-dir', targetDir], {
  stdio: 'inherit',
})
const out = join(targetDir, profile === 'dev' ? 'debug' : profile)
const lib = ['libagentfw_node.so', 'libagentfw_node.dylib', 'agentfw_node.dll'].map((f) => join(out, f)).find(existsSync)
if (!lib) throw new Error(`no agentfw_node library in ${out}`)
copyFileSync(lib, join(here, 'agentfw.node'))
