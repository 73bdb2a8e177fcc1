# Every target sets itself up: a fresh machine with Python 3.11+ needs nothing else.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo demo-fleet test check lint bench clean realhost image-test kubectl-debian

$(STAMP): pyproject.toml sim/pyproject.toml fleet/pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]' -e ./sim -e './fleet[test]'
	chmod 600 examples/pull-secret.json  # git keeps no 0600: the example secret as a real one must be
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/snoreloc demo

# A fleet of 50 sites on a simulated hub: render, validate, the controller, sticks, node reports, status, report.
demo-fleet: $(STAMP)
	$(BIN)/snoreloc demo --fleet

lint: $(STAMP)
	$(BIN)/ruff check src sim fleet tests bench tools
	$(BIN)/ruff format --check src sim fleet tests bench tools
	$(BIN)/mypy
	$(BIN)/lint-imports

# The simulator-timed tests and the real-host suite (NetworkManager, systemd, browsers in namespaces) run one after
# the other: together on two cores the real-host processes would starve the simulator's scaled clocks.
test: lint
	$(BIN)/python -m pytest -n 2 -q -m "not realhost"
	$(MAKE) --no-print-directory realhost
	$(BIN)/python tools/test_against_served_cluster.py

# The real-host suite alone (root; .ci/run installs its packages first; without them its tests skip, saying why).
realhost: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q -m realhost tests/realhost

# The container image (root, podman, debootstrap, runc): the Containerfile built on a local Debian base, then the
# CLI run in it. Its base and podman storage live under .cache/image. IMAGE_TEST_FLAGS=--require: a skip fails.
image-test: $(STAMP)
	containers/image-test $(IMAGE_TEST_FLAGS)

# Debian's kubectl (package kubernetes-client, 1.20), the real client the hub simulator's tests drive
# (tests/hubsim/test_hub_kubectl.py), unpacked under .cache/kubectl-debian without installing it: it conflicts with
# the non-Debian `kubectl` package some machines carry. Without it those tests skip, saying how to get it.
KUBECTL_DEBIAN := .cache/kubectl-debian/usr/bin/kubectl
kubectl-debian: $(KUBECTL_DEBIAN)

$(KUBECTL_DEBIAN):
	mkdir -p .cache/kubectl-debian
	[ -e .cache/.gitignore ] || printf '*\n' >.cache/.gitignore
	cd .cache/kubectl-debian && rm -f kubernetes-client_*.deb && apt-get download -q kubernetes-client
	dpkg-deb -x .cache/kubectl-debian/kubernetes-client_*.deb .cache/kubectl-debian
	$(KUBECTL_DEBIAN) version --client

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build src/*.egg-info sim/src/*.egg-info fleet/src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
