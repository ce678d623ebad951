/**
 * A small parser of the Prometheus text exposition format 0.0.4, strict
 * enough to fail on what Prometheus would reject: every sample line is
 * `name{labels} value`, names and label names are valid, HELP/TYPE come
 * before their samples and at most once per family, TYPE is a known type,
 * a counter's samples are not negative.
 */

export type Family = { name: string; help: string | null; type: string | null; samples: { labels: Record<string, string>; value: number }[] }

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/

const parseValue = (v: string): number => {
  if (v === '+Inf') return Infinity
  if (v === '-Inf') return -Infinity
  if (v === 'NaN') return NaN
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v)) throw new Error(`bad sample value ${JSON.stringify(v)}`)
  return Number(v)
}

export function parsePrometheus(text: string): Map<string, Family> {
  const families = new Map<string, Family>()
  const seenSamples = new Set<string>()
  const family = (name: string): Family => {
    let f = families.get(name)
    if (!f) {
      f = { name, help: null, type: null, samples: [] }
      families.set(name, f)
    }
    return f
  }
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline')
  text.slice(0, -1).split('\n').forEach((line, n) => {
    const where = `line ${n + 1}`
    if (line === '') return
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line)
      if (!m) return // a plain comment
      const [, kind, name, rest] = m as unknown as [string, string, string, string]
      if (!NAME.test(name)) throw new Error(`${where}: bad metric name ${name}`)
      const f = family(name)
      if (f.samples.length > 0) throw new Error(`${where}: ${kind} for ${name} after its samples`)
      if (kind === 'HELP') {
        if (f.help !== null) throw new Error(`${where}: second HELP for ${name}`)
        f.help = rest.replace(/\\n/g, '\n').replace(/\\\\/g, '\\')
      } else {
        if (f.type !== null) throw new Error(`${where}: second TYPE for ${name}`)
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) throw new Error(`${where}: bad type ${rest}`)
        f.type = rest
      }
      return
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$/.exec(line)
    if (!m) throw new Error(`${where}: not a sample line: ${line}`)
    const name = m[1]!
    const labels: Record<string, string> = {}
    if (m[3] !== undefined && m[3] !== '') {
      const re = /\s*([^=\s]+)="((?:[^"\\]|\\.)*)"\s*(,|$)/y
      let at = 0
      while (at < m[3].length) {
        re.lastIndex = at
        const l = re.exec(m[3])
        if (!l) throw new Error(`${where}: bad labels ${m[3]}`)
        if (!LABEL.test(l[1]!)) throw new Error(`${where}: bad label name ${l[1]}`)
        labels[l[1]!] = l[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\')
        at = re.lastIndex
      }
    }
    const key = name + JSON.stringify(Object.entries(labels).sort())
    if (seenSamples.has(key)) throw new Error(`${where}: duplicate sample ${key}`)
    seenSamples.add(key)
    const value = parseValue(m[4]!)
    const base = families.get(name) ? name : name.replace(/_(sum|count|bucket)$/, '')
    const f = family(base)
    if (f.type === 'counter' && value < 0) throw new Error(`${where}: negative counter ${name}`)
    f.samples.push({ labels, value })
  })
  return families
}

/** The single unlabelled value of a family, or undefined. */
export const valueOf = (fams: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined =>
  fams.get(name)?.samples.find((s) => JSON.stringify(s.labels) === JSON.stringify(labels))?.value
