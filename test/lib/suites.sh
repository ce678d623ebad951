# shellcheck shell=bash
#
# test/lib/suites.sh: the list of suites, test/suites/SUITES.  Sourced (not
# run) by scripts/test.sh and test/suites/05-docs.sh, after scripts/lib.sh.
#
#   a2_suites DIR     prints the names DIR/SUITES lists, one a line, in its
#                     order; returns 1, each problem on stderr, when the
#                     list and DIR/*.sh disagree:
#                       - a name with no DIR/NAME.sh,
#                       - a name listed twice or not a plain file name,
#                       - a DIR/*.sh the list leaves out (a suite that
#                         would never run, or a helper that belongs in
#                         test/lib/),
#                       - no DIR/SUITES at all.
#
# The list is explicit so that a suite runs because it is listed, not
# because of its mode bits: before it, scripts/test.sh ran every executable
# test/suites/*.sh and skipped, with a warning, a suite that had lost its
# run bit.

a2_suites() {
	local dir=$1 list=$1/SUITES line name file problems=0
	local -A listed=()
	local -a names=()
	if [[ ! -f $list ]]; then
		a2_warn "suites: $list is missing"
		return 1
	fi
	while IFS= read -r line || [[ -n $line ]]; do
		line=${line%%#*}
		# trim: the name is the line's one word
		read -r name <<<"$line" || true
		[[ -n $name ]] || continue
		if [[ $line =~ [^[:space:]]+[[:space:]]+[^[:space:]] || ! $name =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]]; then
			a2_warn "suites: $list: '${line//[[:space:]]/ }' is not a suite name (one name a line, the file's name without .sh)"
			problems=1
			continue
		fi
		name=${name%.sh}
		if [[ -n ${listed[$name]:-} ]]; then
			a2_warn "suites: $list names $name twice"
			problems=1
			continue
		fi
		listed[$name]=1
		if [[ ! -f $dir/$name.sh ]]; then
			a2_warn "suites: $list names $name, but $dir/$name.sh does not exist"
			problems=1
			continue
		fi
		names+=("$name")
	done <"$list"
	for file in "$dir"/*.sh; do
		[[ -e $file ]] || continue
		name=$(basename "$file" .sh)
		if [[ -z ${listed[$name]:-} ]]; then
			a2_warn "suites: $file is not listed in $list: add it there if it is a suite (it runs nowhere else), or move it to test/lib/ if suites source it"
			problems=1
		fi
	done
	if ((${#names[@]} > 0)); then
		printf '%s\n' "${names[@]}"
	fi
	return "$problems"
}
