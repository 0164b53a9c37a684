# JVM package (jvm/): uniffi-generated Kotlin over JNA (bindings/uniffi), a Java-friendly
# API (RLock implements java.util.concurrent.locks.Lock) and Kotlin coroutines, the native
# library inside the jar. Maven builds the native library itself (jvm/build-native.sh: an
# incremental `cargo build` of bindings/uniffi, ql-harness and the CLI), and the tests start
# their own ql-harness nodes, so `cd jvm && mvn verify` works alone too.
MVN ?= mvn
MVN_FLAGS ?= -B -q
# A JDK 21+ for the virtual-thread run of the contention tests and the example, when present.
JVM_JDK21 ?= $(firstword $(wildcard /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/java-25-openjdk-amd64 /usr/lib/jvm/java-21-openjdk-amd64))
JVM_VERSION = $(shell sed -n 's|^  <version>\(.*\)</version>|\1|p' jvm/pom.xml | head -n1)
JVM_ALL_JAR = jvm/target/quorumlock-$(JVM_VERSION)-all.jar

.PHONY: deps-jvm test-jvm bench-jvm jvm-bindings
TEST_TARGETS += test-jvm
DEPS_TARGETS += deps-jvm

## deps-jvm: a JDK 17, Maven and strip (Debian packages), then every Maven dependency and
## plugin of jvm/ in ~/.m2, so test-jvm runs offline (bench-jvm fetches Redisson itself).
JVM_DEPS_STAMP := $(abspath $(or $(CARGO_TARGET_DIR),target))/jvm-deps.stamp
deps-jvm:
	@missing=""; \
	command -v javac >/dev/null 2>&1 || missing="$$missing openjdk-17-jdk-headless"; \
	command -v mvn >/dev/null 2>&1 || missing="$$missing maven"; \
	command -v strip >/dev/null 2>&1 || missing="$$missing binutils"; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing (apt-get)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
	@# go-offline misses plugins' own dependencies and the JUnit provider: a build without the
	@# native library, running only the tests that need none, fetches them. Done once per
	@# pom.xml (a stamp holds its hash): make test runs deps again, and this build takes minutes.
	@stamp=$(JVM_DEPS_STAMP); sum=$$(sha256sum jvm/pom.xml | cut -d' ' -f1); \
	if [ "$$(cat $$stamp 2>/dev/null)" = "$$sum" ] && [ -d "$$HOME/.m2/repository" ]; then \
	  echo "deps-jvm: Maven dependencies of this pom.xml already fetched"; exit 0; fi; \
	set -ex; \
	cd jvm && $(MVN) $(MVN_FLAGS) -Dql.native.skip=true dependency:go-offline; \
	$(MVN) $(MVN_FLAGS) -Dql.native.skip=true -Dtest=OptionsTest -Dsurefire.failIfNoSpecifiedTests=false package; \
	cd .. && mkdir -p $$(dirname $$stamp) && echo "$$sum" > $$stamp

## test-jvm: mvn verify offline (cargo build of the native library, Kotlin and Java compile,
## JUnit 5 against real nodes, the jars), then a Java program that has only the -all jar on
## its class path locks against 5 nodes, on JDK 17 and on $(JVM_JDK21) when present.
test-jvm: harness
	@start=$$(date +%s); set -e; \
	cd jvm && $(MVN) $(MVN_FLAGS) -o verify $(if $(JVM_JDK21),-Dql.jdk21.home=$(JVM_JDK21)); cd ..; \
	$(HARNESS) exec --nodes 5 -- sh -ec 'java -cp $(JVM_ALL_JAR) jvm/examples/Hello.java \
	  $(if $(JVM_JDK21),; $(JVM_JDK21)/bin/java --enable-native-access=ALL-UNNAMED -cp $(JVM_ALL_JAR) jvm/examples/Hello.java)'; \
	awk -v secs=$$(( $$(date +%s) - start )) 'match($$0, /<testsuite [^>]*>/) { t = substr($$0, RSTART, RLENGTH); \
	    for (k in a) delete a[k]; n = split(t, f, /[ "=]+/); for (i = 1; i < n; i++) a[f[i]] = f[i + 1]; \
	    tests += a["tests"]; bad += a["failures"] + a["errors"]; skip += a["skipped"] } \
	  END { printf "test-jvm: %d passed, %d failed, %d skipped (JUnit, both JDK runs); wall time %d s\n", tests - bad - skip, bad, skip, secs }' \
	  jvm/target/surefire-reports/TEST-*.xml $(if $(JVM_JDK21),jvm/target/surefire-reports-jdk21/TEST-*.xml)

## jvm-bindings: regenerate the checked-in Kotlin from the native library (after changing
## bindings/uniffi); GeneratedBindingsTest fails until this is run and committed.
jvm-bindings:
	$(CARGO) build --locked -p quorumlock-uniffi
	$(or $(CARGO_TARGET_DIR),target)/debug/uniffi-bindgen generate \
	  --library $(or $(CARGO_TARGET_DIR),target)/debug/libquorumlock_uniffi.so \
	  --language kotlin --no-format --out-dir jvm/src/main/kotlin

## bench-jvm: acquire + release against Redisson (RedissonRedLock over the same 5 nodes and a
## single-node RLock), release build of the native library; never part of `make test`.
bench-jvm: harness
	cd jvm && $(MVN) $(MVN_FLAGS) install -DskipTests -Dql.cargo.profile=release
	cd jvm/bench && $(MVN) $(MVN_FLAGS) package
	$(CARGO) build --release --locked -q -p quorumlock-bench --bin quorumlock-bench
	QL_BENCH_RUST_BIN=$(abspath $(or $(CARGO_TARGET_DIR),target))/release/quorumlock-bench \
	  $(HARNESS) exec --nodes 5 -- java -cp "jvm/bench/target/quorumlock-bench.jar" invalid.example.quorumlock.bench.Bench
