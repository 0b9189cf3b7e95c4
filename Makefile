# runbot — build, test, lint, generate, demo.
# `make demo` and `make test` work on a fresh machine with only Go: they
# install what they need (Debian packages via apt-get when root, Go tools
# via `go install` at pinned versions) or stop naming what is missing.

GO            ?= go
BIN           := bin
GOLANGCI      := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
ALERTMANAGER  := github.com/prometheus/alertmanager/cmd/alertmanager@v0.31.1
GOBIN         := $(shell $(GO) env GOPATH)/bin
export PATH   := $(GOBIN):$(PATH)

.PHONY: all build test test-deps lint generate demo bench clean e2e e2e-down release recordings matrix-full image image-test soak soak-cluster

all: build

build:
	$(GO) build -o $(BIN)/runbot ./cmd/runbot
	$(GO) build -o $(BIN)/sglang-sim ./cmd/sglang-sim

# test-deps installs what the tests use as real parts: OpenSSH's sshd and
# client, PostgreSQL (the store's tests start a throwaway cluster), Chromium
# (the web report pages are tested in a real browser), and a real
# Prometheus Alertmanager. Debian packages come without their recommends,
# each listed with why before it is installed; when all is there it does
# nothing.
test-deps:
	@scripts/test-deps.sh

# The scenario matrix (runbooks.TestScenarioMatrix) writes its table of
# faults x conditions to bin/scenario-matrix.txt; it is shown after the run.
test: test-deps
	@mkdir -p $(BIN) && rm -f $(BIN)/scenario-matrix.txt
	RUNBOT_MATRIX_OUT=$(CURDIR)/$(BIN)/scenario-matrix.txt $(GO) test -race -count=1 -timeout 45m ./...
	$(GO) run ./cmd/runbot test runbooks/
	@echo "scenario matrix (sglang-pd-wedge at its defaults; each condition is a surrounding state, a profile of a real SGLang build or a knob within one, at the simulator's defaults otherwise; the full matrix: make matrix-full):"; cat $(BIN)/scenario-matrix.txt 2>/dev/null || echo "(the matrix did not run)"

# matrix-full runs every cell of the scenario matrix, the covering subset
# in `make test` and the cells it leaves out (profile-2026-mid, which is the
# default profile again); one fault: RUNBOT_MATRIX_ONLY=decode-hang, some
# conditions: RUNBOT_MATRIX_CONDITIONS=metrics-off,mooncake.
matrix-full: build
	@mkdir -p $(BIN)
	RUNBOT_MATRIX_FULL=1 RUNBOT_MATRIX_OUT=$(CURDIR)/$(BIN)/scenario-matrix-full.txt $(GO) test -count=1 -timeout 40m -run TestScenarioMatrix ./runbooks
	@cat $(BIN)/scenario-matrix-full.txt

# soak: three serve replicas on PostgreSQL under a steady load (alerts,
# incidents approved from Slack, a scheduled audit) while random faults hit
# one at a time (SIGKILL, a freeze, a cut from the database), for 30
# minutes; RUNBOT_SOAK=5m for a shorter one. Not part of `make test`.
RUNBOT_SOAK ?= 30m
soak: test-deps
	RUNBOT_SOAK=$(RUNBOT_SOAK) $(GO) test -tags soak -count=1 -timeout 60m -v -run '^TestSoak$$' ./cmd/runbot

# soak-cluster: the same load and the faults of the e2e replica tests on
# systemd test hosts (three serve replicas, each on a host of its own, a
# PostgreSQL primary and standby on two more, the target on another): a
# replica's host loses power, a replica is cut off from PostgreSQL or
# from the target, the primary is lost and the standby promoted. Needs
# root, like make e2e; RUNBOT_SOAK as for soak.
soak-cluster: test-deps
	RUNBOT_SOAK=$(RUNBOT_SOAK) $(GO) test -tags e2e,soak -count=1 -timeout 60m -v -run '^TestReplicasSoak$$' ./test/e2e/

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./test/...
	$(GO) vet -tags soak ./cmd/runbot
	$(GO) vet -tags e2e,soak ./test/e2e/
	$(GO) run $(GOLANGCI) run ./...

# e2e: the whole incident on systemd-nspawn test hosts (test/testhost).
# Needs root; installs systemd-container and debootstrap when missing; the
# first run builds the host image (~1-4 min), later runs boot in seconds.
e2e: test-deps
	$(GO) test -tags e2e -count=1 -p 1 -timeout 45m -v ./test/e2e/...

e2e-down:
	bash test/testhost/down.sh

# recordings refreshes the shipped runbooks' recorded test cases
# (runbooks/builtin/testdata/recordings) from the simulator; the cases'
# expectations in runbooks/builtin/*_test.yaml stay as written, and are
# checked at once (and by `make test`): a refresh that changes a verdict
# fails here.
# http-alive-not-working's cases are recorded against the simulator and
# gpu-node-health's from its case files by their Go tests; systemd-crashloop's
# need the systemd test hosts (root): RUNBOT_UPDATE_RECORDINGS=1 go test
# -tags e2e -run TestSystemdCrashloop ./test/e2e/
recordings: build
	BIN=$(CURDIR)/$(BIN) scripts/recordings.sh
	$(GO) test ./runbooks/builtin -run 'TestHTTPAliveNotWorking|TestGPUNodeHealthCases' -count=1 -update
	$(GO) run ./cmd/runbot test runbooks/

generate:
	$(GO) test ./runbooks/refdoc -run TestGeneratedFilesAreCurrent -update -count=1

# demo asks before it applies the fix; without a terminal (CI, a pipe)
# approve up front with `make demo ARGS=--yes`.
demo: build
	$(BIN)/runbot demo --sim $(BIN)/sglang-sim $(ARGS)

# release: static, stripped runbot binaries for linux/amd64 and linux/arm64
# in dist/, with SHA256SUMS; VERSION defaults to `git describe`.
release:
	scripts/release.sh dist

# image: the container image (deploy/image/Containerfile, docs/deploy.md):
# FROM scratch, a static runbot, the build machine's CA bundle and the
# non-root user runbot (uid 65532), built offline with podman as
# localhost/runbot:VERSION and :latest (IMAGE=NAME names it otherwise;
# VERSION defaults to `git describe`). Installs podman via apt-get when root
# and missing.
image:
	@deploy/image/deps.sh
	deploy/image/build.sh

# image-test builds the image and runs it (as root): runbot version, serve
# --check and serve answering /readyz with a mounted config and store.
image-test:
	$(GO) test -tags e2e -count=1 -timeout 10m -v -run '^TestImage$$' ./test/e2e/

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./runbooks ./sim ./remote/... ./web

clean:
	rm -rf $(BIN)
