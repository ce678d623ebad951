// a2 dashboard: live charts from server-sent events, drawn on <canvas>.
// No framework and no inline script (the pages' CSP allows only this file).
'use strict'

const COLORS = ['#2563eb', '#16a34a', '#9333ea', '#dc2626', '#ea580c']
const WINDOW_MS = 3600 * 1000

function draw(canvas, samples) {
  const series = canvas.dataset.series.split(',')
  const ctx = canvas.getContext('2d')
  const w = canvas.width
  const h = canvas.height
  const pad = { l: 48, r: 8, t: 8, b: 18 }
  ctx.clearRect(0, 0, w, h)
  const now = samples.length ? samples[samples.length - 1].t : Date.now()
  const t0 = now - WINDOW_MS
  let max = 0
  for (const s of samples) for (const k of series) if (typeof s[k] === 'number' && s[k] > max) max = s[k]
  if (max === 0) max = 1
  ctx.strokeStyle = '#d4d4d8'
  ctx.fillStyle = '#52525b'
  ctx.font = '11px sans-serif'
  ctx.lineWidth = 1
  for (let i = 0; i <= 4; i++) {
    const y = pad.t + ((h - pad.t - pad.b) * i) / 4
    ctx.beginPath()
    ctx.moveTo(pad.l, y)
    ctx.lineTo(w - pad.r, y)
    ctx.stroke()
    const v = max * (1 - i / 4)
    ctx.fillText(v >= 100 ? Math.round(v).toString() : v.toFixed(1), 2, y + 4)
  }
  ctx.fillText('-60 min', pad.l, h - 4)
  ctx.fillText('now', w - pad.r - 22, h - 4)
  const x = (t) => pad.l + ((t - t0) / WINDOW_MS) * (w - pad.l - pad.r)
  const y = (v) => pad.t + (1 - v / max) * (h - pad.t - pad.b)
  series.forEach((k, i) => {
    ctx.strokeStyle = COLORS[i % COLORS.length]
    ctx.lineWidth = 2
    ctx.beginPath()
    let started = false
    for (const s of samples) {
      if (typeof s[k] !== 'number') continue
      if (!started) ctx.moveTo(x(s.t), y(s[k]))
      else ctx.lineTo(x(s.t), y(s[k]))
      started = true
    }
    ctx.stroke()
    ctx.fillStyle = COLORS[i % COLORS.length]
    ctx.fillText(k, pad.l + 6 + i * 110, pad.t + 10)
  })
  // For tests and assistive tech: the newest values, as text.
  const last = samples[samples.length - 1] || {}
  canvas.dataset.points = String(samples.length)
  canvas.dataset.last = series.map((k) => `${k}=${typeof last[k] === 'number' ? last[k] : ''}`).join(' ')
  canvas.setAttribute('aria-label', canvas.dataset.last)
}

function setText(id, text) {
  const el = document.getElementById(id)
  if (el) el.textContent = text
}

function live() {
  const canvases = Array.from(document.querySelectorAll('canvas[data-series]'))
  if (canvases.length === 0) return
  const base = document.body.dataset.base || ''
  let samples = []
  const redraw = () => {
    for (const c of canvases) draw(c, samples)
    const s = samples[samples.length - 1]
    setText('sample-count', String(samples.length))
    if (!s) return
    const n = (v) => v.toLocaleString('en-US')
    setText('m-backlog', n(s.eligible))
    setText('m-leased', n(s.leased))
    setText('m-scheduled', n(s.scheduled))
    setText('m-dead', n(s.dead))
    setText('m-lane', n(s.laneWaiting))
    if (s.cancelled !== null) setText('m-cancelled', n(s.cancelled))
    setText('m-lag', s.lagSeconds.toFixed(1) + ' s')
    if (s.appendsPerSecond !== null) setText('m-appends', s.appendsPerSecond.toFixed(1))
    if (s.finishedPerSecond !== null) setText('m-finished', s.finishedPerSecond.toFixed(1))
  }
  const es = new EventSource(base + '/api/stream')
  es.addEventListener('history', (ev) => {
    samples = JSON.parse(ev.data)
    setText('live-status', 'live')
    redraw()
  })
  es.addEventListener('sample', (ev) => {
    samples.push(JSON.parse(ev.data))
    const cut = samples[samples.length - 1].t - WINDOW_MS
    while (samples.length && samples[0].t < cut) samples.shift()
    redraw()
  })
  es.onerror = () => setText('live-status', 'reconnecting…')
}

function selection() {
  // "Redrive selected" needs a selection; say so instead of posting nothing.
  const form = document.getElementById('selection')
  if (!form) return
  form.addEventListener('submit', (ev) => {
    if (!form.querySelector('input[name=item]:checked')) {
      ev.preventDefault()
      alert('Select at least one event first.')
    }
  })
}

document.addEventListener('DOMContentLoaded', () => {
  live()
  selection()
})
