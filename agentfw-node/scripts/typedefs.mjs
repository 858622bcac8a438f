// After `napi build --dts`, keeps only index.d.ts (the CLI's build output is not used),
// with the generated `Output` interface replaced by the union in shapes.d.ts (discriminated
// by `kind`, so that `out.kind === 'refused'` narrows `out.refusal` to a `Refusal`) and the
// JSON shapes there, which the `ts_type` attributes in src/ name, imported and re-exported.
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(dirname(fileURLToPath(import.meta.url)))

/** `text` (napi's index.d.ts) over the shapes in shapes.d.ts. */
export function typed(text, shapes) {
  const generated = /\/\*\*\n \* The firewall's answer to one input\.[\s\S]*?\nexport interface Output \{[\s\S]*?\n\}\n\n?/
  if (!generated.test(text)) throw new Error('index.d.ts: no generated `Output` interface to replace')
  const names = [...shapes.matchAll(/^export (?:type|interface) (\w+)/gm)].map((m) => m[1]).sort()
  return `${text.replace(generated, '')}\nimport type { ${names.join(', ')} } from './shapes'\nexport * from './shapes'\n`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = join(here, 'target-typedefs', 'index.d.ts')
  const shapes = readFileSync(join(here, 'shapes.d.ts'), 'utf8')
  writeFileSync(join(here, 'index.d.ts'), typed(readFileSync(out, 'utf8'), shapes))
  rmSync(join(here, 'target-typedefs'), { recursive: true, force: true })
}
