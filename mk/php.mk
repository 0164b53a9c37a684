# PHP package (php/): PHP 8 FFI over libquorumlock. test-php uses the debug library installed
# once per make run into target/ql-prefix (`ql-prefix` in mk/c.mk: `make install`, as a user
# would) and runs PHPUnit against ql-harness nodes with QUORUMLOCK_LIB pointing there; the suite also runs the example, the bundled-library
# lookup and the PHP-FPM preload recipe (under php-cgi) in fresh processes.
PHP ?= php
PHPUNIT ?= /usr/bin/phpunit
PHP_PREFIX = $(QL_PREFIX)

.PHONY: test-php php-lib deps-php
TEST_TARGETS += test-php
DEPS_TARGETS += deps-php

# php8.2-cli (FFI), phpunit, and php8.2-cgi for the preload test (a SAPI where ffi.enable=preload restricts FFI).
deps-php:
	@missing=""; \
	command -v $(PHP) >/dev/null 2>&1 || missing="$$missing php8.2-cli"; \
	[ -x $(PHPUNIT) ] || missing="$$missing phpunit"; \
	command -v php-cgi >/dev/null 2>&1 || missing="$$missing php8.2-cgi"; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing (apt-get)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

## php-lib: libquorumlock (debug) under target/ql-prefix.
php-lib: ql-prefix

## test-php: PHPUnit (php -d ffi.enable=1) against 3 ql-harness nodes.
test-php: harness php-lib
	@start=$$(date +%s.%N); \
	QUORUMLOCK_LIB=$(PHP_PREFIX)/lib/libquorumlock.so $(HARNESS) exec --nodes 3 -- \
	  $(PHP) -d ffi.enable=1 $(PHPUNIT) -c php/phpunit.xml.dist; rc=$$?; \
	awk -v s=$$start -v e=$$(date +%s.%N) 'BEGIN { printf "test-php: %.1f s (PHPUnit and its nodes)\n", e - s }'; exit $$rc
