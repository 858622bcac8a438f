// The native addon built by scripts/build.mjs (`npm install` runs it). Types: index.d.ts,
// generated from the Rust definitions by `npm run typedefs`.
module.exports = require('./agentfw.node')
