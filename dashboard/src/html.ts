/** HTML building with escaping by default: every interpolated value is text. */

export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value
  }
}

export const escapeHtml = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;')

type Part = Html | string | number | boolean | null | undefined | Part[]

const render = (v: Part): string => {
  if (v === null || v === undefined || v === false) return ''
  if (v instanceof Html) return v.value
  if (Array.isArray(v)) return v.map(render).join('')
  return escapeHtml(String(v))
}

/** Tagged template: strings are trusted markup, values are escaped (Html values are kept). */
export function h(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0] ?? ''
  values.forEach((v, i) => {
    out += render(v) + (strings[i + 1] ?? '')
  })
  return new Html(out)
}

/** A query string from pairs, values encoded. */
export const qs = (params: Record<string, string | number | null | undefined>): string => {
  const u = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== '') u.set(k, String(v))
  const s = u.toString()
  return s === '' ? '' : `?${s}`
}
