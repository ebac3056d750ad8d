# svc-code: build, run and test everything from the repository root.
#
# The modules are tied together by go.work. `go test ./...` fails at the root of a
# workspace, so every target goes through the list of module directories instead.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

GO ?= go
BIN := bin
CMDS := ./services/gateway/cmd/gateway ./services/chat/cmd/chat \
	./services/terminal/cmd/terminal ./services/shadow/cmd/shadow \
	./services/analytics/cmd/analytics
# Shell command printing "<dir>/..." for every module of the workspace.
MODULE_PKGS := $(GO) list -m -f '{{.Dir}}/...'

# The integration tests (and benchmarks) run against real servers; these are the local
# ones. Exported to those targets only: `make run`'s services, and so their shells and
# agents, never see them (run.sh drops any TEST_* variable it is given, too).
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
TEST_TARGETS := test test-deps check bench bench-terminal bench-chat bench-shadow bench-analytics
$(TEST_TARGETS): export TEST_DATABASE_URL := $(TEST_DATABASE_URL)
$(TEST_TARGETS): export TEST_REDIS_URL := $(TEST_REDIS_URL)

.PHONY: build run test test-deps check vet lint fmt-check passwd bench bench-terminal clean compose-check \
	test-real-agents bench-chat bench-shadow bench-analytics agents protocol ui ui-check ui-test ui-dev ui-e2e bench-ui

# build: compile the five services into bin/
build:
	$(GO) build -o $(BIN)/ $(CMDS)

# run: start PostgreSQL if needed, provision the data home's database, start its own
# password-protected Redis, build, serve on 127.0.0.1:8765 (SVC_CODE_PROFILE=NAME: the
# profile's data home, config, database, Redis and ports). Ctrl-C stops it (exit 0).
run:
	bash deploy/scripts/run.sh

# agents: install the pinned Claude Code and Codex CLIs (the versions make
# test-real-agents uses) for this user, into ~/.local/share/svc-code/agents, linked
# from ~/.local/bin; then sign them in (the script says how)
agents:
	bash deploy/scripts/install-agents.sh

# test: every module, with -race, against the PostgreSQL and Redis above, then the
# browser app's checks (the committed bundle is its sources' build; its unit tests)
# and its end-to-end tests
test: test-deps
	pkgs=$$($(MODULE_PKGS)); $(GO) test -race -count=1 $$pkgs
	$(MAKE) ui-check ui-test ui-e2e

# The browser app (web/): TypeScript, Vite, Preact. Its build, web/dist, is committed
# and embedded in the gateway, so Go alone serves the whole UI. Needs Node >= 20.19.
UI_DIR := web

# ui: install the pinned packages and rebuild web/dist from web/src
ui:
	cd $(UI_DIR) && npm ci --no-audit --no-fund && npm run build

# ui-check: fail when the committed web/dist differs from a build of its sources
ui-check:
	@cd $(UI_DIR) && npm ci --no-audit --no-fund >/dev/null && \
		out=$$(mktemp -d) && trap 'rm -rf "$$out"' EXIT && \
		SVC_UI_OUT="$$out/dist" npm run --silent build >/dev/null && \
		if ! diff -r "$$out/dist" dist >/dev/null; then \
			echo "web/dist is not the build of web/src: run make ui and commit web/dist"; \
			diff -rq "$$out/dist" dist || true; exit 1; fi && \
		echo "web/dist matches its sources"

# ui-test: the app's unit tests (vitest, happy-dom)
ui-test:
	cd $(UI_DIR) && npm ci --no-audit --no-fund >/dev/null && npx vitest run

# ui-dev: Vite's dev server on 127.0.0.1:5173 against a running stack (SVC_UI_TARGET,
# default http://127.0.0.1:8765); add http://127.0.0.1:5173 to allowed_origins
ui-dev:
	cd $(UI_DIR) && npm ci --no-audit --no-fund && npx vite --host 127.0.0.1

# ui-e2e: the browser end-to-end tests (web/e2e): playwright-core drives Debian's
# chromium (installed by ensure-browser.sh) against a stack started by run.sh on free
# ports with a temporary HOME; screenshots and the stack's log go to web/e2e/artifacts/
ui-e2e:
	bash deploy/scripts/ensure-browser.sh
	cd web/e2e && npm ci --no-audit --no-fund --loglevel=error && node run.mjs

# Fails (so the tests fail rather than skip) when either server is unreachable, or when
# a program the tests run (git, curl, shellcheck, rg) is missing: before, not minutes in.
test-deps:
	@bash deploy/scripts/ensure-tools.sh --check
	@DATABASE_URL="$$TEST_DATABASE_URL" REDIS_URL="$$TEST_REDIS_URL" \
		bash deploy/scripts/ensure-deps.sh --check

# test-real-agents: opt-in, not part of test: the provider tests against the real Claude
# Code CLI (pinned, installed with npm into ~/.cache when missing) talking to a fake
# model server on loopback
test-real-agents:
	bash deploy/scripts/test-real-agents.sh

# check: formatting, vet, lint and the tests
check: fmt-check vet lint test

# lint: golangci-lint at the version pinned in .golangci-lint-version (installed
# with go install when missing), with the root .golangci.yml, over every module
GOLANGCI_VERSION := $(shell cat .golangci-lint-version)
GOLANGCI := $(shell $(GO) env GOPATH)/bin/golangci-lint
lint:
	@if ! "$(GOLANGCI)" version 2>/dev/null | grep -q "$(GOLANGCI_VERSION:v%=%)"; then \
		echo "installing golangci-lint $(GOLANGCI_VERSION)"; \
		$(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION); fi
	@for d in $$($(GO) list -m -f '{{.Dir}}'); do (cd "$$d" && "$(GOLANGCI)" run ./...) || exit 1; done

vet:
	pkgs=$$($(MODULE_PKGS)); $(GO) vet $$pkgs

# protocol: regenerate web/src/protocol/types.gen.ts from the Go types of libs/protocol
# (tygo, pinned in tools/tygo); libs/protocol's tests fail while it is stale
protocol:
	cd libs && $(GO) generate ./protocol

# fmt-check: fail if gofmt would change any Go file (testdata and vendor excluded)
fmt-check:
	@dirs=$$($(GO) list -m -f '{{.Dir}}'); \
	files=$$(find $$dirs -name '*.go' -not -path '*/testdata/*' -not -path '*/vendor/*' \
		-not -path '*/node_modules/*'); \
	bad=$$(if [[ -n $$files ]]; then gofmt -l $$files; fi); \
	if [[ -n $$bad ]]; then echo "gofmt -l lists files to format (run gofmt -w on them):"; \
		echo "$$bad"; exit 1; fi

# passwd: rotate the gateway password (reads the new one from stdin, or generates one)
passwd:
	$(GO) build -o $(BIN)/ ./services/gateway/cmd/gateway
	$(BIN)/gateway passwd

# bench: run the benchmark suite, which writes BENCHMARKS.md at the repository root
bench:
	$(GO) run ./bench/cmd/bench $(BENCH_ARGS)

# bench-terminal: the terminal benchmark (raw PTY, terminal service, gateway, wetty), which
# writes its section of BENCHMARKS.md; it installs wetty with npm into ~/.cache when missing
bench-terminal:
	$(GO) run ./bench/cmd/termbench $(BENCH_ARGS)

# bench-chat: the chat fan-out benchmark (10 000 sockets on two chat instances, with
# PostgreSQL and Redis), which writes its section of BENCHMARKS.md
bench-chat:
	$(GO) run ./bench/cmd/chatbench $(BENCH_ARGS)

# bench-shadow: the shadow benchmark (content search over a 10 000-file project, and the
# journal's commit time with 10 files changed per turn), which writes its section of BENCHMARKS.md
bench-shadow:
	$(GO) run ./bench/cmd/shadowbench $(BENCH_ARGS)

# bench-analytics: the analytics benchmark (small queries on /sql, aggregates over a million
# turns, turn-ingest p99 with and without hostile /sql queries), which writes its section of
# BENCHMARKS.md
bench-analytics:
	$(GO) run ./bench/cmd/analyticsbench $(BENCH_ARGS)

# bench-ui: the browser UI benchmarks, in Debian's chromium against a stack started as
# make run does, each writing its section of BENCHMARKS.md: the conversation (JavaScript
# shipped, opening a 10 000-message session, its heap, frames per second while messages
# stream in), the SQL grid at 100 000 rows, a 10 000-line file in the Files pane, and the
# Terminal pane (a cat rendered through the page beside termbench, keystroke echo), and
# opening a 100 MB Claude Code transcript in the terminal-session view (clibench)
bench-ui:
	bash deploy/scripts/ensure-browser.sh
	cd web/e2e && npm ci --no-audit --no-fund --loglevel=error
	node bench/ui/uibench.mjs $(BENCH_ARGS)
	node bench/ui/sqlbench.mjs
	node bench/ui/filesbench.mjs
	node bench/ui/terminalbench.mjs
	node bench/ui/clibench.mjs

clean:
	rm -rf $(BIN)

# compose-check: validate docker-compose.yml without a Docker engine
compose-check:
	@if docker compose version >/dev/null 2>&1; then \
		echo "docker compose config -q"; docker compose config -q; \
	elif command -v docker-compose >/dev/null 2>&1; then \
		echo "docker-compose config -q"; docker-compose config -q; \
	else \
		echo "no docker compose here: checking the file's structure only"; \
	fi
	@python3 -c 'import yaml' 2>/dev/null || { \
		echo "compose-check needs PyYAML: apt-get install -y python3-yaml"; exit 1; }
	@python3 -c "$$COMPOSE_CHECK_PY" docker-compose.yml

# Structural checks that hold whatever the compose tool: every service is there, builds
# from a Dockerfile that exists, has a healthcheck, waits for healthy dependencies, and
# only the gateway publishes a port (on loopback).
define COMPOSE_CHECK_PY
import os, re, sys, yaml
path = sys.argv[1]
doc = yaml.safe_load(open(path))
errs = []
services = doc.get("services") or {}
want = {"postgres", "redis", "gateway", "chat", "terminal", "shadow", "analytics"}
if set(services) != want:
    errs.append(f"services are {sorted(services)}, want {sorted(want)}")
volumes = set((doc.get("volumes") or {}).keys())
for name, svc in services.items():
    if not (svc.get("healthcheck") or {}).get("test"):
        errs.append(f"{name}: no healthcheck test")
    build = svc.get("build")
    if build is not None:
        df = os.path.join(build.get("context", "."), build.get("dockerfile", "Dockerfile"))
        if not os.path.isfile(df):
            errs.append(f"{name}: {df} does not exist")
    elif "image" not in svc:
        errs.append(f"{name}: neither image nor build")
    deps = svc.get("depends_on") or {}
    for dep, cond in (deps.items() if isinstance(deps, dict) else []):
        if dep not in services:
            errs.append(f"{name}: depends on unknown service {dep}")
        if (cond or {}).get("condition") != "service_healthy":
            errs.append(f"{name}: depends on {dep} without condition service_healthy")
    for vol in svc.get("volumes") or []:
        # A $${VAR:-default} source is a bind mount that docker creates when missing.
        created = isinstance(vol, str) and vol.startswith("$${")
        if created:
            vol = re.sub(r"[$$][{](\w+):-([^}]*)[}]", lambda m: os.environ.get(m.group(1)) or m.group(2), vol)
        src = vol.split(":")[0] if isinstance(vol, str) else vol.get("source", "")
        if src.startswith((".", "/")):
            if not created and not os.path.exists(src):
                errs.append(f"{name}: bind mount {src} does not exist")
        elif src and src not in volumes:
            errs.append(f"{name}: volume {src} is not declared")
    ports = svc.get("ports") or []
    if name != "gateway" and ports:
        errs.append(f"{name}: publishes {ports}; only the gateway may")
    if name == "gateway" and not all(str(p).startswith("127.0.0.1:") for p in ports):
        errs.append(f"gateway: publishes {ports} beyond loopback")
for e in errs:
    print(f"{path}: {e}", file=sys.stderr)
if errs:
    sys.exit(1)
print(f"{path}: {len(services)} services look right")
endef
export COMPOSE_CHECK_PY
