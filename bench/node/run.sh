#!/usr/bin/env bash
#
# bench/node/run.sh: the append -> claim -> complete cycle through the
# TypeScript client (a2) against the Node B3 loop (the seed's statements
# through pg), at 1 and 4 clients, in three network settings, one run:
#
#   direct   the cluster's Unix socket (no network)
#   proxy0   a loopback TCP proxy that adds no delay (the proxy's own cost)
#   proxy1   the same proxy delaying each direction by A2_BENCH_DELAY_MS
#            (default 1) ms: an application on another host
#
# Every (setting, clients) pair runs a2 and B3 next to each other, in an
# order that alternates between repeats; the table shows median cycles/s
# over the repeats and the ratio a2 / B3.
#
#   A2_BENCH_SECONDS   seconds per point (default 5)
#   A2_BENCH_REPEAT    repeats (default 3)
#   A2_BENCH_CLIENTS   client counts (default "1 4")
#   A2_BENCH_SETTINGS  settings (default "direct proxy0 proxy1")
#   A2_BENCH_QUIET     1 adds "a2q": the client on connections with
#                      a2.notify = off, for reference (default 0)
#   A2_BENCH_PG_OPTIONS  startup options for every benchmark connection,
#                      e.g. "-c synchronous_commit=off" (PGOPTIONS would not
#                      do: scripts/cluster.sh env unsets it)
#   A2_PGDATA, A2_PGPORT, A2_BENCH_KEEP   the cluster, as for bench/run.sh
#
# Needs the a2 extension installed (make install) and clients/node built;
# it runs `npm ci && npm run build` there when dist/ is missing.

set -euo pipefail

NODE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# The installation the cluster runs (scripts/cluster.sh follows PG_CONFIG).
if [[ -z ${PGBIN:-} && -n ${PG_CONFIG:-} ]]; then
	PGBIN=$("$PG_CONFIG" --bindir)
fi
# shellcheck source=bench/lib.sh
. "$NODE_DIR/../lib.sh"

SECONDS_PER=${A2_BENCH_SECONDS:-5}
REPEAT=${A2_BENCH_REPEAT:-3}
CLIENTS=${A2_BENCH_CLIENTS:-1 4}
SETTINGS=${A2_BENCH_SETTINGS:-direct proxy0 proxy1}
DELAY=${A2_BENCH_DELAY_MS:-1}
DB=a2bench_node
OUT=${A2_BENCH_OUT:-$(dirname "$A2_PGDATA")/results/node-$(date -u +%Y%m%dT%H%M%SZ)}

command -v node >/dev/null 2>&1 || bench_die "node not found (test/suites/80-node-client.sh shows how to get it)"
if [[ ! -f $A2_ROOT/clients/node/dist/index.js ]]; then
	(cd "$A2_ROOT/clients/node" && npm ci --no-audit --no-fund && npm run build)
fi

proxies=()
stop_all() {
	local pid
	for pid in "${proxies[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	bench_cluster_stop
}

bench_cluster_start
trap stop_all EXIT
# After the start: scripts/cluster.sh makes the parent directory itself.
mkdir -p "$OUT"
bench_create_db "$DB"

sock=$PGHOST/.s.PGSQL.$PGPORT
# Start a proxy on a free loopback port with DELAY ms; sets proxy_port.
start_proxy() {
	local name=$1 delay=$2 out
	out=$OUT/proxy-$name.out
	node "$NODE_DIR/proxy.mjs" 0 "$sock" "$delay" >"$out" 2>&1 &
	proxies+=("$!")
	for _ in $(seq 50); do
		proxy_port=$(sed -n 's/^ready \([0-9][0-9]*\)$/\1/p' "$out" 2>/dev/null)
		[[ -n $proxy_port ]] && return 0
		sleep 0.1
	done
	bench_die "proxy $name did not start: $(cat "$out")"
}
start_proxy proxy0 0
port0=$proxy_port
start_proxy proxy1 "$DELAY"
port1=$proxy_port

url_of() {
	case $1 in
	direct) printf 'postgresql://%s@/%s?host=%s&port=%s' "$PGUSER" "$DB" "$(node -p 'encodeURIComponent(process.argv[1])' "$PGHOST")" "$PGPORT" ;;
	proxy0) printf 'postgresql://%s@127.0.0.1:%s/%s' "$PGUSER" "$port0" "$DB" ;;
	proxy1) printf 'postgresql://%s@127.0.0.1:%s/%s' "$PGUSER" "$port1" "$DB" ;;
	*) bench_die "unknown setting $1" ;;
	esac
}

{
	printf '## Machine\n\n'
	bench_machine
	printf -- '- Benchmark connections: options %s\n' "'${A2_BENCH_PG_OPTIONS:-}'"
	printf -- '- Node: %s; pg %s\n' "$(node --version)" \
		"$(node -p 'require(process.argv[1]).version' "$A2_ROOT/clients/node/node_modules/pg/package.json")"
} >"$OUT/machine.md"

tsv=$OUT/runs.tsv
printf 'repeat\tsetting\tclients\tmode\tcycles\tseconds\tcps\n' >"$tsv"
bench_log "node bench: ${SECONDS_PER}s per point, $REPEAT repeats, clients: $CLIENTS, settings: $SETTINGS; output $OUT"
for ((r = 1; r <= REPEAT; r++)); do
	bench_psql "$DB" -c 'VACUUM (INDEX_CLEANUP ON) a2_events' -c 'ANALYZE a2_events'
	for setting in $SETTINGS; do
		url=$(url_of "$setting")
		for c in $CLIENTS; do
			if ((r % 2)); then order="a2 b3"; else order="b3 a2"; fi
			if [[ ${A2_BENCH_QUIET:-0} == 1 ]]; then order="$order a2q"; fi
			for mode in $order; do
				line=$(node "$NODE_DIR/cycle.mjs" "$mode" "$c" "$SECONDS_PER" "nb-$mode-$setting-c$c-r$r" "$url")
				bench_log "r$r $setting c$c $mode: $line"
				node -e 'const j = JSON.parse(process.argv[1]); console.log([process.argv[2], process.argv[3], j.clients, j.mode, j.cycles, j.seconds, j.cps].join("\t"))' \
					"$line" "$r" "$setting" >>"$tsv"
			done
		done
	done
done

# Medians and ratios, as one Markdown table.
node - "$tsv" "$SETTINGS" "$CLIENTS" >"$OUT/table.md" <<'JS'
const fs = require('node:fs')
const [tsv, settings, clients] = process.argv.slice(2)
const rows = fs.readFileSync(tsv, 'utf8').trim().split('\n').slice(1).map((l) => l.split('\t'))
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2 }
const cps = (set, c, mode) => rows.filter((r) => r[1] === set && r[2] === c && r[3] === mode).map((r) => Number(r[6]))
const quiet = rows.some((r) => r[3] === 'a2q')
console.log('| setting | clients | a2 client cycles/s (runs) | Node B3 cycles/s (runs) | a2 / B3 |' + (quiet ? ' a2, notify off (runs) | a2q / B3 |' : ''))
console.log('|---|---|---|---|---|' + (quiet ? '---|---|' : ''))
for (const set of settings.split(/\s+/)) for (const c of clients.split(/\s+/)) {
  const a = cps(set, c, 'a2'), b = cps(set, c, 'b3'), q = cps(set, c, 'a2q')
  let line = `| ${set} | ${c} | ${median(a)} (${a.join(', ')}) | ${median(b)} (${b.join(', ')}) | ${(median(a) / median(b)).toFixed(2)} |`
  if (quiet) line += ` ${median(q)} (${q.join(', ')}) | ${(median(q) / median(b)).toFixed(2)} |`
  console.log(line)
}
JS
cat "$OUT/machine.md"
printf '\n'
cat "$OUT/table.md"
