# Release artifacts (packaging/README.md). `make dist` builds into dist/ what a release publishes:
# the Python abi3 wheel (manylinux, checked by maturin's auditwheel) and sdist, the npm packages
# `quorumlock` and `quorumlock-linux-x64-gnu`, and the C tarball. `make test-dist` installs each
# one where PATH has no cargo or rustc and locks against ql-harness nodes. The one-version
# check (`make test-versions`, in `make test`) is mk/versions.mk.
DIST := dist
DIST_ABS = $(abspath $(DIST))
DIST_STAGE = $(abspath $(or $(CARGO_TARGET_DIR),target))/dist-stage
DIST_C_NAME = quorumlock-$(QL_VERSION)-linux-x86_64
# napi build always passes --target; maturin and make install get the same triple, so the three
# builds share one tree of release artifacts (target/$(DIST_TRIPLE)/release).
DIST_TRIPLE := x86_64-unknown-linux-gnu
# Reproducible archives: file times from the last commit.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

.PHONY: dist dist-python dist-node dist-c test-dist deps-dist
DEPS_TARGETS += deps-dist

# strip and readelf (binutils) for dist and test-dist; cc, pkg-config and cmake come from deps-c.
deps-dist:
	@if ! command -v strip >/dev/null 2>&1 || ! command -v readelf >/dev/null 2>&1; then \
	  echo "installing binutils (apt-get)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq binutils >/dev/null; \
	fi

## dist: every release artifact into dist/, then their sizes.
dist: deps-dist test-versions dist-python dist-node dist-c
	@packaging/sizes.sh $(DIST)

## dist-python: the sdist, and the wheel built from it (release, stripped, auditwheel check).
dist-python:
	@test -x $(VENV_PY) || python3 -m venv $(VENV)
	$(VENV_PY) -m pip install -q -r python/requirements-dev.txt
	@mkdir -p $(DIST)
	rm -f $(DIST)/quorumlock-*.whl $(DIST)/quorumlock-$(QL_VERSION).tar.gz
	cd python && CARGO_TARGET_DIR=$(abspath $(or $(CARGO_TARGET_DIR),target)) \
	  ../$(VENV)/bin/maturin build --release --target $(DIST_TRIPLE) --sdist --strip \
	  --auditwheel check -o $(DIST_ABS)

## dist-node: the addon (release, stripped) in quorumlock-linux-x64-gnu, and quorumlock itself.
dist-node: node/node_modules
	@mkdir -p $(DIST)
	rm -rf $(DIST_STAGE)/napi $(DIST)/quorumlock-$(QL_VERSION).tgz $(DIST)/quorumlock-linux-*.tgz
	cd $(NODE_DIR) && node_modules/.bin/napi build --platform --release --js native.js \
	  --dts native.d.ts --output-dir $(DIST_STAGE)/napi
	@for f in native.js native.d.ts; do cmp -s $(NODE_DIR)/$$f $(DIST_STAGE)/napi/$$f || \
	  { echo "node/$$f is stale: run npm run build in node/ and commit it"; exit 1; }; done
	strip $(DIST_STAGE)/napi/*.node
	node packaging/npm-stage.mjs $(NODE_DIR) $(DIST_STAGE)/napi $(DIST_STAGE)/npm
	@set -e; for d in $(DIST_STAGE)/npm/*/; do \
	  (cd "$$d" && $(NPM) pack --silent --pack-destination $(DIST_ABS) >/dev/null); done
	@ls $(DIST)/*.tgz

## dist-c: quorumlock-X.Y.Z-linux-x86_64.tar.gz: `make install` (release) into a relocatable
## prefix (pkg-config prefix from ${pcfiledir}), binaries stripped.
dist-c:
	@mkdir -p $(DIST)
	rm -rf $(DIST_STAGE)/c $(DIST)/$(DIST_C_NAME).tar.gz
	CARGO_BUILD_TARGET=$(DIST_TRIPLE) $(MAKE) --no-print-directory install \
	  PREFIX=$(DIST_STAGE)/c/$(DIST_C_NAME) QL_PROFILE=release QL_PROFILE_DIR=$(DIST_TRIPLE)/release
	@set -e; root=$(DIST_STAGE)/c/$(DIST_C_NAME); \
	strip $$root/bin/quorumlock $$root/lib/libquorumlock.so.$(QL_VERSION); \
	strip --strip-debug --enable-deterministic-archives $$root/lib/libquorumlock.a; \
	sed -i 's|^prefix=.*|prefix=$${pcfiledir}/../..|' $$root/lib/pkgconfig/quorumlock.pc; \
	if grep -rl "$(DIST_STAGE)" $$root; then echo "dist-c: the files above name the build prefix"; exit 1; fi; \
	install -d $$root/share/doc/quorumlock; \
	install -m 644 packaging/c-README.md $$root/share/doc/quorumlock/README.md; \
	install -m 644 CHANGELOG.md $$root/share/doc/quorumlock/CHANGELOG.md; \
	tar -C $(DIST_STAGE)/c --sort=name --owner=0 --group=0 --numeric-owner \
	  --mtime=@$(SOURCE_DATE_EPOCH) -cf - $(DIST_C_NAME) | gzip -9n > $(DIST)/$(DIST_C_NAME).tar.gz
	@ls $(DIST)/$(DIST_C_NAME).tar.gz

## test-dist: install each artifact in dist/ with no cargo or rustc on PATH, lock on 3 real nodes.
test-dist: deps-dist harness
	packaging/test-dist.sh $(DIST) $(abspath $(HARNESS))
