# bench/report.awk -- the one results table of bench/run.sh.
#
#   awk -F'\t' -v clients="1 4" -f report.awk keys.tsv ratios.tsv runs.tsv
#
# keys.tsv:   key, label, events appended per pgbench transaction (0: n/a)
# ratios.tsv: name, numerator key, denominator key, numerator factor,
#             denominator factor, op (">=", "<=" or "-"), target
# runs.tsv:   key, clients, repeat, tps, mean ms, p99 ms, transactions
#
# Every figure is the median over the repeats; a ratio divides the median
# TPS of its two workloads (times their factors, e.g. events per
# transaction) at the same client count.

function median(list,    n, a, i, j, t) {
	n = split(list, a, " ")
	if (n == 0)
		return ""
	for (i = 2; i <= n; i++) {
		t = a[i] + 0
		for (j = i - 1; j >= 1 && a[j] + 0 > t; j--)
			a[j + 1] = a[j]
		a[j + 1] = t
	}
	if (n % 2 == 1)
		return a[(n + 1) / 2] + 0
	return (a[n / 2] + a[n / 2 + 1]) / 2
}

function spread(list, med,    n, a, i, lo, hi) {
	n = split(list, a, " ")
	if (n < 2 || med == 0)
		return "-"
	lo = hi = a[1] + 0
	for (i = 2; i <= n; i++) {
		if (a[i] + 0 < lo) lo = a[i] + 0
		if (a[i] + 0 > hi) hi = a[i] + 0
	}
	return sprintf("±%.0f%%", 50 * (hi - lo) / med)
}

function num(x, digits) {
	if (x == "")
		return "-"
	if (digits == "tps")
		return (x >= 100) ? sprintf("%.0f", x) : sprintf("%.1f", x)
	return sprintf("%." digits "f", x)
}

function row(a, b, c, d, e, f, g, h, i) {
	printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", a, b, c, d, e, f, g, h, i
}

FILENAME ~ /keys\.tsv$/ {
	nkeys++
	keys[nkeys] = $1
	label[$1] = $2
	evper[$1] = $3
	next
}

FILENAME ~ /ratios\.tsv$/ {
	nratios++
	rname[nratios] = $1
	rnum[nratios] = $2
	rden[nratios] = $3
	rnf[nratios] = $4
	rdf[nratios] = $5
	rop[nratios] = $6
	rtarget[nratios] = $7
	next
}

FILENAME ~ /runs\.tsv$/ {
	k = $1 SUBSEP $2
	tps[k] = tps[k] " " $4
	mean[k] = mean[k] " " $5
	p99[k] = p99[k] " " $6
	next
}

END {
	nc = split(clients, cl, " ")
	row("workload", "clients", "TPS", "TPS spread", "events/s", "mean ms", "p99 ms", "ratio", "target")
	row("---", "--:", "--:", "--:", "--:", "--:", "--:", "--:", "---")
	for (i = 1; i <= nkeys; i++) {
		key = keys[i]
		for (j = 1; j <= nc; j++) {
			k = key SUBSEP cl[j]
			if (!(k in tps))
				continue
			t = median(tps[k])
			med_tps[k] = t
			ev = (evper[key] > 0) ? num(t * evper[key], 0) : ""
			row(label[key], cl[j], num(t, "tps"), spread(tps[k], t), ev,
				num(median(mean[k]), 2), num(median(p99[k]), 2), "", "")
		}
	}
	for (i = 1; i <= nratios; i++) {
		for (j = 1; j <= nc; j++) {
			kn = rnum[i] SUBSEP cl[j]
			kd = rden[i] SUBSEP cl[j]
			if (!(kn in med_tps) || !(kd in med_tps) || med_tps[kd] == 0) {
				value = "n/a"
				verdict = ""
			} else {
				v = (med_tps[kn] * rnf[i]) / (med_tps[kd] * rdf[i])
				value = sprintf("%.2f", v)
				if (rop[i] == ">=")
					verdict = (v >= rtarget[i]) ? "met" : "MISSED"
				else if (rop[i] == "<=")
					verdict = (v <= rtarget[i]) ? "met" : "MISSED"
			}
			if (rop[i] == "-")
				target = "(no target)"
			else
				target = ((rop[i] == ">=") ? "≥ " : "≤ ") rtarget[i] ((verdict != "") ? ": " verdict : "")
			row("ratio: " rname[i], cl[j], "", "", "", "", "", value, target)
		}
	}
}
