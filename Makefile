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

.PHONY: all build test test-deps lint generate demo bench clean

all: build

build:
	$(GO) build -o $(BIN)/runbot ./cmd/runbot
	$(GO) build -o $(BIN)/sglang-sim ./cmd/sglang-sim

# test-deps installs what the tests use as real parts: OpenSSH's sshd and
# client, and a real Prometheus Alertmanager.
test-deps:
	@scripts/test-deps.sh

test: test-deps
	$(GO) test -race -count=1 -timeout 20m ./...

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(GOLANGCI) run ./...

generate:
	$(GO) test ./runbooks -run TestGeneratedFilesAreCurrent -update -count=1

demo: build
	$(BIN)/runbot run host-basics --inventory examples/inventory.yaml --param host=localhost

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./runbooks ./sim ./remote

clean:
	rm -rf $(BIN)
