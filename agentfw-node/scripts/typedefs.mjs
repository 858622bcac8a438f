// After `napi build --dts`, keeps only index.d.ts: the CLI's build output is not used.
import { rmSync, renameSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(dirname(fileURLToPath(import.meta.url)))
renameSync(join(here, 'target-typedefs', 'index.d.ts'), join(here, 'index.d.ts'))
rmSync(join(here, 'target-typedefs'), { recursive: true, force: true })
