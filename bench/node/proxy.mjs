// A loopback TCP proxy that delays every chunk, in each direction, by a
// fixed time: an application "on another host" for the Node benchmarks.
//
//   node bench/node/proxy.mjs LISTEN_PORT TARGET DELAY_MS
//
// TARGET is a Unix socket path (the benchmark cluster listens on one only)
// or host:port. It listens on 127.0.0.1 only; LISTEN_PORT 0 picks a free
// port. Chunks keep their order: timers with the same delay fire in the
// order they were set. It prints "ready PORT" once listening, and exits on
// SIGTERM or SIGINT.

import net from 'node:net'

const [portArg, target, delayArg] = process.argv.slice(2)
const port = Number(portArg)
const delay = Number(delayArg ?? '1')
if (!Number.isInteger(port) || !target || !(delay >= 0)) {
  console.error('usage: proxy.mjs LISTEN_PORT TARGET DELAY_MS')
  process.exit(2)
}

const connectTarget = () => {
  if (target.startsWith('/')) return net.connect({ path: target })
  const i = target.lastIndexOf(':')
  return net.connect({ host: target.slice(0, i), port: Number(target.slice(i + 1)) })
}

// Copy from `from` to `to`, each chunk `delay` ms late.
const pipeDelayed = (from, to) => {
  from.on('data', (chunk) => {
    if (delay === 0) to.write(chunk)
    else setTimeout(() => to.write(chunk), delay)
  })
  from.on('end', () => setTimeout(() => to.end(), delay))
  from.on('error', () => to.destroy())
}

const server = net.createServer((client) => {
  client.setNoDelay(true)
  const upstream = connectTarget()
  if (!target.startsWith('/')) upstream.setNoDelay(true)
  pipeDelayed(client, upstream)
  pipeDelayed(upstream, client)
  upstream.on('close', () => client.destroy())
  client.on('close', () => upstream.destroy())
})

server.listen(port, '127.0.0.1', () => console.log(`ready ${server.address().port}`))
const stop = () => {
  server.close(() => process.exit(0))
  setTimeout(() => process.exit(0), 500).unref()
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
