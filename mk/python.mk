# Python package (python/): build the extension into .venv, lint, test against real nodes.
VENV := .venv
VENV_PY := $(VENV)/bin/python

.PHONY: test-python demo-python python-venv
TEST_TARGETS += test-python
DEMO_TARGETS += demo-python

$(VENV_PY):
	python3 -m venv $(VENV)

## python-venv: .venv with the pinned test tools and the extension (debug build, target/).
python-venv: $(VENV_PY)
	$(VENV_PY) -m pip install -q -r python/requirements-dev.txt
	cd python && VIRTUAL_ENV=$(CURDIR)/$(VENV) ../$(VENV)/bin/maturin develop -q

## test-python: ruff, pytest against ql-harness clusters, stubtest for the .pyi stubs.
test-python: harness python-venv
	$(VENV)/bin/ruff check python
	$(VENV)/bin/ruff format --check python
	QL_HARNESS=$(abspath $(HARNESS)) $(VENV_PY) -m pytest python/tests -q
	$(VENV_PY) -m mypy.stubtest quorumlock._quorumlock

demo-python: harness python-venv
	$(HARNESS) exec --nodes 5 -- $(VENV_PY) examples/python/contention.py
