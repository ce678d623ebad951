#!/usr/bin/env node
/**
 * a2-dashboard [options] [DATABASE_URL]
 *
 * Serves the dashboard for one database (docs/operations.md, "Dashboard").
 */

import { parseArgs } from 'node:util'
import { Dashboard, DEFAULTS, type Options } from './server.js'

const USAGE = `usage: a2-dashboard [options] DATABASE_URL   (or DATABASE_URL / A2_DASHBOARD_URL in the environment)

  --host ADDR         listen address (default 127.0.0.1; 0.0.0.0 only behind your own auth)
  --port N            listen port (default 8450; 0 picks one)
  --metrics-only      serve /metrics and nothing else
  --no-metrics        serve the pages without /metrics
  --no-payloads       never show payloads or presence values
  --read-only         offer and perform no action, whatever the role may do
  --token-file FILE   require this bearer token (first line of FILE; or A2_DASHBOARD_TOKEN)
  --basic-auth-file F require HTTP basic auth, user:password on the first line of F
                      (or A2_DASHBOARD_BASIC_AUTH)
  --poll-ms N         a2_metrics() poll interval for the live charts (default 5000)
  --base-path /P      served under this path prefix by a reverse proxy (e.g. /a2)
`

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      'metrics-only': { type: 'boolean' },
      'no-metrics': { type: 'boolean' },
      'no-payloads': { type: 'boolean' },
      'read-only': { type: 'boolean' },
      'token-file': { type: 'string' },
      'basic-auth-file': { type: 'string' },
      'poll-ms': { type: 'string' },
      'base-path': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) {
    process.stdout.write(USAGE)
    return
  }
  const databaseUrl = positionals[0] ?? process.env.A2_DASHBOARD_URL ?? process.env.DATABASE_URL
  if (!databaseUrl || positionals.length > 1) {
    process.stderr.write(USAGE)
    process.exit(2)
  }
  const { readFileSync } = await import('node:fs')
  const secret = (file: string | undefined, env: string): string | null => {
    if (file !== undefined) return readFileSync(file, 'utf8').split('\n')[0]!.trim() || null
    return process.env[env]?.trim() || null
  }
  const port = values.port === undefined ? DEFAULTS.port : Number(values.port)
  const pollMs = values['poll-ms'] === undefined ? DEFAULTS.pollMs : Number(values['poll-ms'])
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error('--port must be 0..65535')
  if (!Number.isInteger(pollMs) || pollMs < 100) throw new Error('--poll-ms must be an integer of at least 100')
  if (values['metrics-only'] && values['no-metrics']) throw new Error('--metrics-only and --no-metrics exclude each other')
  const basePath = (values['base-path'] ?? '').replace(/\/+$/, '')
  if (basePath !== '' && !/^\/[A-Za-z0-9._~/-]*$/.test(basePath)) throw new Error('--base-path must look like /a2')
  const opts: Options = {
    ...DEFAULTS,
    databaseUrl,
    host: values.host ?? DEFAULTS.host,
    port,
    pages: !values['metrics-only'],
    metrics: !values['no-metrics'],
    payloads: !values['no-payloads'],
    readOnly: values['read-only'] === true,
    token: secret(values['token-file'], 'A2_DASHBOARD_TOKEN'),
    basicAuth: secret(values['basic-auth-file'], 'A2_DASHBOARD_BASIC_AUTH'),
    pollMs,
    basePath,
  }
  const d = new Dashboard(opts)
  const { host, port: bound } = await d.listen()
  const caps = d.caps!
  process.stdout.write(
    `a2-dashboard: http://${host.includes(':') ? `[${host}]` : host}:${bound}${basePath}/ as role ${caps.role}` +
      ` (${opts.readOnly || !caps.canWriteEvents ? 'read-only' : 'actions allowed'}${opts.pages ? '' : ', /metrics only'}${opts.metrics ? '' : ', no /metrics'})\n`,
  )
  const stop = (): void => {
    void d.close().then(() => process.exit(0))
  }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}

main().catch((err: unknown) => {
  process.stderr.write(`a2-dashboard: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
