# Makefile for the a2 extension (PGXS)

EXTENSION = a2
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(EXTENSION).control)

MODULE_big = a2
OBJS = \
	src/module.o \
	src/clock.o \
	src/spi_plans.o \
	src/validate.o \
	src/json_out.o \
	src/notify.o \
	src/append.o \
	src/read.o \
	src/claim.o \
	src/renew.o \
	src/complete.o \
	src/fail.o \
	src/pins.o \
	src/snapshots.o \
	src/state.o \
	src/presence.o

DATA = $(wildcard sql/$(EXTENSION)--*.sql)

# pg_regress: readable end-to-end examples, one file per operation
REGRESS = clock append read claim renew complete fail snapshots state presence
REGRESS_OPTS = --inputdir=. --load-extension=$(EXTENSION)

# isolation specs: one per concurrency promise (test/isolation/specs)
ISOLATION = $(patsubst test/isolation/specs/%.spec,%,$(sort $(wildcard test/isolation/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test/isolation --outputdir=output_iso --load-extension=$(EXTENSION)

PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter

EXTRA_CLEAN = output_iso results regression.diffs regression.out

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

.PHONY: version-check
version-check:
	@grep -q '"version": "$(EXTVERSION)"' META.json || \
		{ echo "META.json version differs from a2.control ($(EXTVERSION))"; exit 1; }
	@test -f sql/$(EXTENSION)--$(EXTVERSION).sql || \
		{ echo "missing sql/$(EXTENSION)--$(EXTVERSION).sql"; exit 1; }
