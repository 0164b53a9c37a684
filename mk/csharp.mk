# C# package (csharp/): P/Invoke over libquorumlock, built and tested under Mono (mcs, NUnit 2.6).
# test-csharp uses the debug library installed once per make run into target/ql-prefix
# (`ql-prefix` in mk/c.mk: `make install`, as a user would), compiles Quorumlock.dll, the
# example, the contention worker and the NUnit suite into target/csharp, and runs the suite against ql-harness nodes with QUORUMLOCK_LIB pointing at
# the prefix.
MCS ?= mcs
CS_PREFIX = $(QL_PREFIX)
CS_BUILD := $(abspath $(or $(CARGO_TARGET_DIR),target))/csharp
CS_NUNIT := /usr/lib/cli/nunit.framework-2.6.3/nunit.framework.dll
CS_FLAGS := -nologo -warnaserror -debug

.PHONY: test-csharp csharp-lib csharp-build deps-csharp
TEST_TARGETS += test-csharp
DEPS_TARGETS += deps-csharp

# mono-mcs (the C# 7 compiler), mono-runtime, NUnit 2.6 (framework and console runner).
deps-csharp:
	@missing=""; \
	command -v $(MCS) >/dev/null 2>&1 || missing="$$missing mono-mcs"; \
	command -v mono >/dev/null 2>&1 || missing="$$missing mono-runtime"; \
	[ -f $(CS_NUNIT) ] || missing="$$missing libnunit-cil-dev"; \
	command -v nunit-console >/dev/null 2>&1 || missing="$$missing nunit-console"; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing (apt-get)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

## csharp-lib: libquorumlock (debug) under target/ql-prefix.
csharp-lib: ql-prefix

## csharp-build: Quorumlock.dll (with its XML docs), Hello.exe, the worker and the tests under target/csharp.
csharp-build:
	@mkdir -p $(CS_BUILD)
	$(MCS) $(CS_FLAGS) -target:library -out:$(CS_BUILD)/Quorumlock.dll -doc:$(CS_BUILD)/Quorumlock.xml csharp/src/Quorumlock/*.cs
	$(MCS) $(CS_FLAGS) -out:$(CS_BUILD)/Hello.exe -r:$(CS_BUILD)/Quorumlock.dll csharp/examples/Hello/Program.cs
	$(MCS) $(CS_FLAGS) -out:$(CS_BUILD)/ContentionWorker.exe -r:$(CS_BUILD)/Quorumlock.dll csharp/tests/ContentionWorker/Program.cs
	$(MCS) $(CS_FLAGS) -target:library -out:$(CS_BUILD)/Quorumlock.Tests.dll -r:$(CS_BUILD)/Quorumlock.dll -r:$(CS_NUNIT) csharp/tests/Quorumlock.Tests/*.cs

## test-csharp: the NUnit suite (nunit-console under Mono) against 3 ql-harness nodes.
test-csharp: harness csharp-lib csharp-build
	@start=$$(date +%s.%N); \
	QL_HARNESS=$(abspath $(HARNESS)) QUORUMLOCK_LIB=$(CS_PREFIX)/lib/libquorumlock.so $(HARNESS) exec --nodes 3 -- csharp/tests/run-tests.sh $(CS_BUILD); rc=$$?; \
	awk -v s=$$start -v e=$$(date +%s.%N) 'BEGIN { printf "test-csharp: %.1f s (NUnit and its nodes)\n", e - s }'; exit $$rc
