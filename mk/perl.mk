# Perl distribution Quorumlock (perl/): FFI::Platypus over libquorumlock.so from a
# target-local install. test-perl uses the debug library installed once per make run into
# target/ql-prefix (`ql-prefix` in mk/c.mk), points the module at it with QUORUMLOCK_LIB,
# runs the Test::More suites with prove against 5 ql-harness nodes, then checks the documented
# install path (perl Makefile.PL recording the library found through pkg-config, make, make
# install, a fresh perl with a clean environment).
PERL ?= perl
PROVE ?= prove
PERL_PREFIX = $(QL_PREFIX)
PERL_ENV = QUORUMLOCK_LIB=$(PERL_PREFIX)/lib QL_HARNESS=$(abspath $(HARNESS))

.PHONY: test-perl perl-lib deps-perl
TEST_TARGETS += test-perl
DEPS_TARGETS += deps-perl

## deps-perl: Debian's FFI::Platypus (with FFI::CheckLib), prove and pkg-config.
deps-perl:
	@if ! $(PERL) -MFFI::Platypus -MFFI::CheckLib -e1 >/dev/null 2>&1 || ! command -v $(PROVE) >/dev/null 2>&1 \
	    || ! command -v pkg-config >/dev/null 2>&1 || ! command -v make >/dev/null 2>&1; then \
	  echo "installing libffi-platypus-perl pkg-config make (apt-get)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	    perl libffi-platypus-perl pkg-config make >/dev/null; \
	fi
	@$(PERL) -MFFI::Platypus -e 'printf "perl %vd; FFI::Platypus %s\n", $$^V, $$FFI::Platypus::VERSION'

## perl-lib: libquorumlock (debug) with headers and pkg-config file under target/ql-prefix.
perl-lib: ql-prefix

## test-perl: prove against real nodes, then the install check.
test-perl: harness perl-lib
	@set -e; start=$$(date +%s%N); \
	cd perl && for f in lib/Quorumlock.pm lib/Quorumlock/*.pm; do \
	  $(PERL_ENV) $(PERL) -Ilib -c $$f >/dev/null 2>&1 || { $(PERL_ENV) $(PERL) -Ilib -c $$f; exit 1; }; done; \
	$(PERL_ENV) $(abspath $(HARNESS)) exec --nodes 5 --persist none -- $(PROVE) -l t/; \
	$(abspath $(HARNESS)) exec --nodes 3 --persist none -- t/install_check.sh "$(PERL_PREFIX)"; \
	echo "test-perl: $$(( ($$(date +%s%N) - start) / 1000000 )) ms"
