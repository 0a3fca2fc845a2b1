# probegen.mk: USDT probes from a probegen catalog in a make build.
#
# Include it from a Makefile after setting (only PROBEGEN_HEADER is required):
#
#   PROBEGEN_HEADER          the header to generate, e.g. include/foo_probes.h
#   PROBEGEN_CATALOG         the catalog (default: probes.yaml)
#   PROBEGEN                 the probegen command (default: probegen)
#   PROBEGEN_CONFIG_HEADER   optional: a header this fragment writes, defining
#   PROBEGEN_ENABLE_MACRO    the catalog's header.enable_macro when CONFIG_USDT=y
#                            (name that header in the catalog's header.includes)
#   PROBEGEN_BINARIES        programs and libraries `make verify-probes` checks
#
# and make the header exist before anything compiles (order-only):
#   $(OBJS): | $(PROBEGEN_HEADER)
# Compile with -MMD -MP (and -include the .d files): then each object depends
# on the header only if it includes it, and recompiles only when the header
# really changed (probegen rewrites it only when its content changes; make
# sees the old mtime, and compares the catalog with a stamp beside it).
#
# It ships with probegen: `probegen paths --make` prints where, so a Makefile
# can include it from there,
#   include $(shell probegen paths --make)
# or a project can copy it into its tree (e.g. mk/probegen.mk). It only needs
# GNU make, a shell and readelf.

PROBEGEN ?= probegen
PROBEGEN_CATALOG ?= probes.yaml

# Including this file must not change the Makefile's default goal.
_probegen_default_goal := $(.DEFAULT_GOAL)

ifeq ($(strip $(PROBEGEN_HEADER)),)
$(error probegen.mk: set PROBEGEN_HEADER to the header to generate before including probegen.mk)
endif

# Regenerate when the catalog or probegen's template (listed in the depfile)
# is newer than the stamp. When nothing changed in the output, the header
# keeps its mtime, so nothing recompiles, and the stamp is new, so the next
# make does nothing. The header's empty recipe makes make look at its mtime
# again (so what includes it recompiles only if it changed); a deleted header
# makes the stamp out of date.
$(PROBEGEN_HEADER).stamp: $(PROBEGEN_CATALOG) $(if $(wildcard $(PROBEGEN_HEADER)),,_probegen_always)
	$(PROBEGEN) header --catalog $(PROBEGEN_CATALOG) -o $(PROBEGEN_HEADER) --stamp $@ --depfile $@.d

$(PROBEGEN_HEADER): $(PROBEGEN_HEADER).stamp ;

-include $(PROBEGEN_HEADER).stamp.d

# CONFIG_USDT=y (SPDK's configure --with-usdt writes it to its config) means
# the enable macro is defined. It goes into a header rather than CFLAGS so
# that switching CONFIG_USDT recompiles what includes the probes.
ifneq ($(strip $(PROBEGEN_CONFIG_HEADER)),)
ifeq ($(strip $(PROBEGEN_ENABLE_MACRO)),)
$(error probegen.mk: PROBEGEN_CONFIG_HEADER needs PROBEGEN_ENABLE_MACRO, the catalog's header.enable_macro)
endif
_probegen_hash := \#
_probegen_config_line = $(if $(filter y,$(CONFIG_USDT)),$(_probegen_hash)define $(PROBEGEN_ENABLE_MACRO) 1,/* $(PROBEGEN_ENABLE_MACRO) undefined: CONFIG_USDT is not y */)

# Runs every time, rewrites only on change: it follows CONFIG_USDT, which
# make cannot see as a file.
$(PROBEGEN_CONFIG_HEADER): _probegen_always
	@mkdir -p $(dir $@)
	@printf '%s\n' '/* Written by probegen.mk: do not edit. */' '$(_probegen_config_line)' > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

$(PROBEGEN_HEADER).stamp: | $(PROBEGEN_CONFIG_HEADER)
endif

.PHONY: _probegen_always verify-probes
_probegen_always:

# With CONFIG_USDT=y every binary must carry the catalog's probes, as
# declared; otherwise none may carry any.
ifeq ($(CONFIG_USDT),y)
verify-probes: $(PROBEGEN_BINARIES)
	$(PROBEGEN) verify --catalog $(PROBEGEN_CATALOG) $(PROBEGEN_BINARIES)
else
verify-probes: $(PROBEGEN_BINARIES)
	@if readelf -n $(PROBEGEN_BINARIES) | grep -q stapsdt; then \
		echo "verify-probes: USDT probes found although CONFIG_USDT is not y:"; \
		readelf -n $(PROBEGEN_BINARIES) | grep -B1 -A2 stapsdt; exit 1; \
	else echo "verify-probes: no USDT probes (CONFIG_USDT is not y)"; fi
endif

.PHONY: clean-probes
clean-probes:
	rm -f $(PROBEGEN_HEADER) $(PROBEGEN_HEADER).stamp $(PROBEGEN_HEADER).stamp.d $(PROBEGEN_CONFIG_HEADER)

.DEFAULT_GOAL := $(_probegen_default_goal)
