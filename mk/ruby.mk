# Ruby gem (ruby/): ruby-ffi over libquorumlock.so from a target-local install.
# test-ruby uses the debug library installed once per make run into target/ql-prefix
# (`ql-prefix` in mk/c.mk), points the gem at it with QUORUMLOCK_LIB, runs the minitest suites
# against 5 ql-harness nodes, then checks the documented install path (gem build + gem
# install --local, a fresh ruby that finds the library through pkg-config).
RUBY ?= ruby
RUBY_PREFIX = $(QL_PREFIX)
RUBY_ENV = QUORUMLOCK_LIB=$(RUBY_PREFIX)/lib QL_HARNESS=$(abspath $(HARNESS))

.PHONY: test-ruby ruby-lib deps-ruby
TEST_TARGETS += test-ruby
DEPS_TARGETS += deps-ruby

## deps-ruby: Debian's ruby, ruby-ffi and ruby-minitest (RubyGems is not needed).
deps-ruby:
	@if ! command -v $(RUBY) >/dev/null 2>&1 || ! $(RUBY) -e 'require "ffi"; require "minitest"' >/dev/null 2>&1 \
	    || ! command -v gem >/dev/null 2>&1 || ! command -v pkg-config >/dev/null 2>&1; then \
	  echo "installing ruby ruby-rubygems ruby-ffi ruby-minitest pkg-config (apt-get)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	    ruby ruby-rubygems ruby-ffi ruby-minitest pkg-config >/dev/null; \
	fi
	@$(RUBY) -e 'require "ffi"; puts "#{RUBY_DESCRIPTION}; ffi #{FFI::VERSION}"'

## ruby-lib: libquorumlock (debug) with headers and pkg-config file under target/ql-prefix.
ruby-lib: ql-prefix

## test-ruby: the minitest suites against real nodes, then the install check.
test-ruby: harness ruby-lib
	@set -e; start=$$(date +%s%N); \
	cd ruby && for f in lib/quorumlock.rb lib/quorumlock/*.rb test/*.rb; do $(RUBY) -wc $$f >/dev/null; done; \
	$(RUBY_ENV) $(abspath $(HARNESS)) exec --nodes 5 --persist none -- \
	  $(RUBY) -w -Ilib -Itest -e 'Dir["test/test_*.rb"].sort.each { |f| require_relative f }'; \
	$(abspath $(HARNESS)) exec --nodes 3 --persist none -- test/install_check.sh "$(RUBY_PREFIX)"; \
	echo "test-ruby: $$(( ($$(date +%s%N) - start) / 1000000 )) ms"
