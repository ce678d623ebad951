# test/citus/stream.sh: sourced by test/citus/run.sh (uses q, pass, fail,
# $root, $here, $coord, $w1, $w2, $A2_CITUS_SOCK).
#
# The TypeScript client's stream in distributed mode (test/citus/stream.mjs):
# a store configured with the coordinator's URL LISTENs on every node
# a2_notify_nodes() lists and receives delegated and coordinator-run appends
# by notification (its poll interval is 10 minutes).
#
# Needs node and the client's dev dependencies (cd clients/node && npm ci);
# without them it prints one "skip" line and counts as neither pass nor fail.

stream_skip() { printf 'skip stream (TypeScript client): %s\n' "$*"; }
if ! command -v node >/dev/null 2>&1; then
	stream_skip "node is not installed"
elif [[ ! -f $root/clients/node/node_modules/pg/package.json || ! -x $root/clients/node/node_modules/.bin/tsc ]]; then
	stream_skip "clients/node has no node_modules (run: cd clients/node && npm ci)"
elif ! (cd "$root/clients/node" && ./node_modules/.bin/tsc -p tsconfig.json) >"$work/stream-build.out" 2>&1; then
	cat "$work/stream-build.out"
	fail "stream: the client does not build"
else
	s1=$(q -c "SELECT citus_test_session_on('stream', $w1)")
	s2=$(q -c "SELECT citus_test_session_on('stream', $w2)")
	sock=$(node -p 'encodeURIComponent(process.argv[1])' "$A2_CITUS_SOCK")
	url="postgresql://postgres@/postgres?host=$sock&port=$coord"
	if timeout 120 node "$here/stream.mjs" "$url" "$s1:$w1" "$s2:$w2" >"$work/stream.out" 2>&1; then
		cat "$work/stream.out"
		pass "stream: the client's stream heard delegated appends on both workers and coordinator-run ones, by LISTEN on each node"
	else
		cat "$work/stream.out"
		fail "stream"
	fi
fi
