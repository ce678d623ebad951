# Makefile for the a2 extension (PGXS)

EXTENSION = a2
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(EXTENSION).control)

MODULE_big = a2
# one object per C file in src/
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))

DATA = $(wildcard sql/$(EXTENSION)--*.sql)

# pg_regress: readable end-to-end examples, one file per operation
REGRESS = clock append read claim renew complete fail snapshots state presence \
	unknown_keys redrive claim_next inspect metrics retire reentrancy scheduling
REGRESS_OPTS = --inputdir=. --load-extension=$(EXTENSION)

# isolation specs: one per concurrency promise (test/isolation/specs)
ISOLATION = $(patsubst test/isolation/specs/%.spec,%,$(sort $(wildcard test/isolation/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test/isolation --outputdir=output_iso --load-extension=$(EXTENSION)

PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter

EXTRA_CLEAN = output_iso results regression.diffs regression.out

PG_CONFIG ?= pg_config

# The supported PostgreSQL majors (README "Supported PostgreSQL versions");
# src/pg_compat.h refuses the others too.
A2_PG_MAJORS = 15 16 17 18
PG_MAJOR := $(shell $(PG_CONFIG) --version 2>/dev/null | sed -n 's/^PostgreSQL \([0-9][0-9]*\).*/\1/p')
ifeq ($(filter $(A2_PG_MAJORS),$(PG_MAJOR)),)
$(error a2 supports PostgreSQL 15 to 18, not this one: $(PG_CONFIG) is $(or $(shell $(PG_CONFIG) --version 2>/dev/null),missing) (set PG_CONFIG=/path/to/pg_config))
endif

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: rebuild every object when one changes
# (after the include, so that PGXS's "all" stays the default goal)
$(OBJS): $(wildcard src/*.h)

.PHONY: version-check
version-check:
	@grep -q '"version": "$(EXTVERSION)"' META.json || \
		{ echo "META.json version differs from a2.control ($(EXTVERSION))"; exit 1; }
	@test -f sql/$(EXTENSION)--$(EXTVERSION).sql || \
		ls sql/$(EXTENSION)--*--$(EXTVERSION).sql >/dev/null 2>&1 || \
		{ echo "no install script or upgrade path to $(EXTVERSION) in sql/"; exit 1; }

# --- releases: PGXN and the packages (scripts/package.sh, docs/operations.md) -
#
# make dist: dist/$(EXTENSION)-$(EXTVERSION).zip, the PGXN distribution, in
# the layout PGXN expects (one top directory $(EXTENSION)-$(EXTVERSION)/ with
# META.json).  It is `git archive` of the tracked files as they are in the
# work tree: an uncommitted change to a tracked file is in it, an untracked
# file is not.  Left out: what is released on its own (clients/ on npm and
# PyPI, and the Node example that imports it), Debian's packaging, the
# benchmarks and the CI entry point.  scripts/package.sh makes the Debian
# source package's upstream tarball from this zip.
DIST_EXCLUDE = debian clients bench .ci examples/clients examples/node-worker.mjs

.PHONY: dist
dist:
	@git rev-parse --git-dir >/dev/null 2>&1 || { echo "make dist needs a git checkout (it runs git archive)"; exit 1; }
	@mkdir -p dist
	@tree=$$(git stash create) && tree=$${tree:-HEAD} && \
	git archive --format=zip --prefix=$(EXTENSION)-$(EXTVERSION)/ \
		--output=dist/$(EXTENSION)-$(EXTVERSION).zip $$tree -- . $(addprefix :!,$(DIST_EXCLUDE)) && \
	echo "dist/$(EXTENSION)-$(EXTVERSION).zip"

# The packages' versions agree with a2.control: debian/changelog, and the
# a2 versions each client package says it serves.
version-check: version-check-packages
.PHONY: version-check-packages
version-check-packages:
	@bash scripts/package.sh versions
