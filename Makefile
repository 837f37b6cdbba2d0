# One-command entry points. Each target installs what it needs, idempotently.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SNAPSHOT ?= snapshots/demo
# `make eval` settings (docs/guides/evaluate.md); the defaults run the offline demo.
MODEL ?= scripted
HARNESS ?= auto
CAPABILITY ?= full
JUDGE ?= offline-baseline
BUDGET ?= default
PARALLEL ?= 1
EXECUTOR ?= local
RUNS_ROOT ?= runs
EVAL_ARGS ?=
# Debian packages the tests and the evaluator use (checked by command, installed only when missing).
SYSTEM_PACKAGES := ffmpeg chromium fonts-noto-cjk debootstrap
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_LOG ?= /tmp/omnidr-apt.log

.PHONY: setup system-deps images test test-durations test-fast docs eval lock clean mlflow-ui audit

setup: system-deps $(STAMP)

system-deps:
	@missing=""; \
	command -v ffmpeg >/dev/null 2>&1 && command -v ffprobe >/dev/null 2>&1 || missing="$$missing ffmpeg"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing="$$missing debootstrap"; \
	[ -d /usr/share/fonts/opentype/noto ] || missing="$$missing fonts-noto-cjk"; \
	$(PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing (log: $(APT_LOG))"; \
	  { $(SUDO) apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; } \
	    >$(APT_LOG) 2>&1 || { tail -n 20 $(APT_LOG); echo "apt-get failed; the whole log is $(APT_LOG)"; exit 1; }; \
	  echo "installed:$$missing"; \
	fi

# pip (as the venv brings it) installs the hash-pinned installers of requirements-bootstrap.lock; uv then installs
# requirements.lock, hash-checked, and the package itself (editable). Byte-compiled at install (on every core), as
# pip does: a process that runs with PYTHONDONTWRITEBYTECODE would otherwise compile all it imports every time.
$(STAMP): requirements.lock requirements-bootstrap.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check --require-hashes -r requirements-bootstrap.lock
	$(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python --require-hashes -r requirements.lock
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps --no-build-isolation -e .
	touch $@

# The lock's wheels, for the test that installs the package the plain way (`pip install .`, no
# network in the test): from PyPI the first time, from pip's cache after that.
WHEELHOUSE := $(VENV)/wheelhouse/.complete
$(WHEELHOUSE): $(STAMP)
	$(BIN)/pip download -q --disable-pip-version-check --no-deps --require-hashes -r requirements.lock -d $(VENV)/wheelhouse
	touch $@

# Every project image, built (or found) before the tests, independent ones at once; prints each image's time.
IMAGE_JOBS ?= 4
images: setup
	$(BIN)/omnidr images build --jobs '$(IMAGE_JOBS)'

# The whole suite on parallel workers (TEST_WORKERS=N to choose; default one per core); the images are built
# (IMAGE_JOBS at once) while the tests that need no Docker run, and each Docker test runs once the images it needs
# are built.
test: setup $(WHEELHOUSE)
	IMAGE_JOBS='$(IMAGE_JOBS)' $(BIN)/nox -s tests

# Unit tests only (no Docker, ffmpeg, network or browser): the edit-test loop. CI runs `make test`.
# Rewrites tests/durations.json (each test's seconds, which orders the parallel run) from a whole run; run it on
# the CI machine with the images built, and commit the file.
test-durations: images
	OMNIDR_DURATIONS_OUT=$(CURDIR)/tests/durations.json $(MAKE) test

test-fast: setup $(WHEELHOUSE)
	$(BIN)/nox -s fast

# The documentation site into site/ (open site/index.html); `make test` builds it too, with --strict.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

eval: setup
	$(BIN)/omnidr eval --snapshot '$(SNAPSHOT)' --model '$(MODEL)' --harness '$(HARNESS)' --capability '$(CAPABILITY)' \
	  --judge '$(JUDGE)' --budget '$(BUDGET)' --parallel '$(PARALLEL)' --executor '$(EXECUTOR)' \
	  --runs-root '$(RUNS_ROOT)' $(EVAL_ARGS)

# Browse a run root's MLflow store: `make mlflow-ui RUN=runs/<snapshot id>` (then the URL eval printed).
RUN ?= $(firstword $(wildcard runs/*/mlflow.db))
mlflow-ui: setup
	@[ -n "$(RUN)" ] || { echo "no run root: pass RUN=runs/<snapshot id> (a folder omnidr eval wrote)"; exit 2; }
	$(BIN)/mlflow ui --backend-store-uri "sqlite:///$(abspath $(patsubst %/mlflow.db,%,$(RUN)))/mlflow.db"

# Process statistics and audit pages of one system folder: `make audit SYSTEM=runs/<id>/<system>`.
audit: setup
	@[ -n "$(SYSTEM)" ] || { echo "pass SYSTEM=runs/<snapshot id>/<system folder>"; exit 2; }
	$(BIN)/omnidr audit '$(SYSTEM)'

# Re-resolve requirements.lock from requirements.in (the pins already in the lock are kept unless requirements.in
# moves them; platform: this machine's), and requirements-bootstrap.lock from requirements-bootstrap.in (every
# platform's wheel hashes). Both with the lock's uv; not part of a normal run.
lock: $(STAMP)
	$(BIN)/uv pip compile -q --generate-hashes --python-version 3.11 -o requirements.lock requirements.in
	$(BIN)/uv pip compile -q --generate-hashes --universal --python-version 3.11 -o requirements-bootstrap.lock requirements-bootstrap.in

clean:
	rm -rf $(VENV) .nox site
