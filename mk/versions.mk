# One version everywhere (packaging/versions.py): Cargo, Python, npm, the C header, Go, the
# CHANGELOG, and the version files of language folders still to come. No build, well under 1 s.
.PHONY: test-versions
TEST_TARGETS += test-versions

## test-versions: the checker's self-test (it must catch each kind of mistake), then the repository.
test-versions:
	@out=$$(python3 packaging/versions.py --self-test) || { echo "$$out"; exit 1; }; echo "$$out" | tail -n1
	@python3 packaging/versions.py
