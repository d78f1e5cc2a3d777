# KubeBYON. 'make run' starts the platform; 'make test' runs every test.
# Both work on a fresh Debian machine with Go, Node.js/npm and the
# 'postgresql' package (plus 'chromium', 'etcd-server' and 'shellcheck' for
# the tests); .ci/run installs those first.

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
BIN       := bin/kubebyon
SQLC      := $(GO) -C tools/sqlc tool sqlc -f ../../sqlc.yaml
GENERATED := views/*_templ.go queries/*.go

.PHONY: all assets build run generate check-generated check-format vet test test-go test-fast fuzz bench kube-apiserver print-kube-apiserver node-tools node-tools-dir print-node-tools-dir clean

all: build

# Front-end packages come from npm (package-lock.json); the built files go
# to static/dist, which git ignores and the binary embeds.
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

# The Makefile too: a file added to the list below is copied on the next make.
static/dist/.stamp: node_modules/.package-lock.json tools/icons/main.go Makefile
	mkdir -p static/dist
	cp node_modules/htmx.org/dist/htmx.min.js static/dist/htmx.min.js
	cp node_modules/htmx-ext-sse/dist/sse.min.js static/dist/htmx-ext-sse.min.js
	cp node_modules/@picocss/pico/css/pico.min.css static/dist/pico.min.css
	cp node_modules/uplot/dist/uPlot.iife.min.js static/dist/uPlot.iife.min.js
	cp node_modules/uplot/dist/uPlot.min.css static/dist/uPlot.min.css
	cp node_modules/swagger-ui-dist/swagger-ui-bundle.js static/dist/swagger-ui-bundle.js
	cp node_modules/swagger-ui-dist/swagger-ui.css static/dist/swagger-ui.css
	$(GO) run ./tools/icons
	@touch $@

assets: static/dist/.stamp

# The Dockerfile's build stage runs this same target.
build: assets
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/kubebyon
	./$(BIN) version

# A release: make release VERSION=v1.2.3. tools/release.sh refuses a
# VERSION not like vMAJOR.MINOR.PATCH or missing from CHANGELOG.md; then the
# binaries for each of RELEASE_ARCHS are built as 'build' builds, into
# dist/ (which git ignores), then the container image for this machine's
# architecture ('image': IMAGE:VERSION and its OCI archive beside the
# binaries), all listed in SHA256SUMS; the Helm chart's appVersion and the
# compose files' default tag are set to VERSION.
RELEASE_ARCHS := amd64 arm64

.PHONY: release
release:
	tools/release.sh check '$(VERSION)'
	$(MAKE) -s assets
	rm -f dist/kubebyon_$(VERSION)_* dist/SHA256SUMS
	for arch in $(RELEASE_ARCHS); do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o dist/kubebyon_$(VERSION)_linux_$$arch ./cmd/kubebyon || exit 1; \
	done
	$(MAKE) -s image VERSION='$(VERSION)'
	tools/release.sh checksums '$(VERSION)'
	tools/release.sh chart '$(VERSION)'

# The container image, built from the Dockerfile without a registry:
# tools/image.sh makes the base images it names (Debian with mmdebstrap, Go
# at go.mod's version, Node.js) when they are missing or their inputs
# changed, then builds IMAGE:VERSION with buildah into the local store
# (podman's) and dist/kubebyon_VERSION_linux_ARCH.oci.tar. Needs the Debian
# packages mmdebstrap, buildah, podman and runc.
IMAGE ?= ghcr.io/kubebyon/kubebyon
IMAGE_ARCHIVE = dist/kubebyon_$(VERSION)_linux_$(shell $(GO) env GOARCH).oci.tar

.PHONY: image
image: assets
	IMAGE=$(IMAGE) tools/image.sh build '$(VERSION)'

# Starts the platform on http://localhost:8080. Without DATABASE_URL it runs
# its own PostgreSQL in ./data.
run: build
	./$(BIN) serve --migrate

generate:
	$(GO) tool templ generate
	$(SQLC) generate

# Regenerates and fails when that changed anything: generated code must be
# committed in step with its sources.
check-generated:
	@before="$$(cat $(GENERATED) | sha256sum)"; \
	$(MAKE) -s generate >/dev/null 2>&1; \
	after="$$(cat $(GENERATED) | sha256sum)"; \
	if [ "$$before" != "$$after" ]; then \
		echo "generated code was stale (views/*_templ.go or queries/): it has been regenerated; review and commit it" >&2; \
		git status --short -- views queries >&2; \
		exit 1; \
	fi
	@$(SQLC) vet

check-format:
	@out="$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change: $$out" >&2; exit 1; fi

# mailpit, the SMTP server the tests send mail to, built from its Go module.
bin/mailpit: tools/mailpit/go.mod tools/mailpit/go.sum
	$(GO) -C tools/mailpit build -o $(CURDIR)/bin/mailpit github.com/axllent/mailpit

# stripe-mock, Stripe's own mock of its API, for the payment tests.
bin/stripe-mock: tools/stripe-mock/go.mod tools/stripe-mock/go.sum
	$(GO) -C tools/stripe-mock build -o $(CURDIR)/bin/stripe-mock github.com/stripe/stripe-mock

# VictoriaMetrics single-node, the Prometheus-compatible store the metrics
# tests write to and query (about 2 minutes the first time).
bin/victoria-metrics: tools/victoriametrics/go.mod tools/victoriametrics/go.sum
	$(GO) -C tools/victoriametrics build -o $(CURDIR)/bin/victoria-metrics github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics

# kube-apiserver for the tests, built from k8s.io/kubernetes in
# tools/kube-apiserver (minutes, and 2 GB, the first time). The binary is
# cached outside the repository, keyed by that module's files, so later runs
# and clean clones on the same machine skip the build.
KAS_VERSION_LDFLAGS := -X k8s.io/component-base/version.gitVersion=v1.34.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34 -X k8s.io/component-base/version.gitTreeState=clean
KAS_KEY   := $(shell (cat tools/kube-apiserver/go.mod tools/kube-apiserver/go.sum tools/kube-apiserver/main.go; echo '$(KAS_VERSION_LDFLAGS)') | sha256sum | cut -c1-16)
KAS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kubebyon
KAS       := $(KAS_CACHE)/kube-apiserver-$(KAS_KEY)

$(KAS):
	mkdir -p $(KAS_CACHE)
	$(GO) -C tools/kube-apiserver build -trimpath -ldflags '-s -w $(KAS_VERSION_LDFLAGS)' -o $@.tmp .
	mv $@.tmp $@

kube-apiserver: $(KAS)

print-kube-apiserver:
	@echo $(KAS)

# kubelet, kubeadm, kube-controller-manager and kube-scheduler for the
# real-node tests, built from k8s.io/kubernetes in tools/kubenode (kubelet
# takes minutes the first time) and cached like kube-apiserver, each keyed
# by the module's files, its main package and the version it reports.
NODE_TOOLS := kubelet kubeadm kube-controller-manager kube-scheduler kube-proxy
NODE_KEY = $(shell (cat tools/kubenode/go.mod tools/kubenode/go.sum tools/kubenode/$(1)/main.go; echo '$(KAS_VERSION_LDFLAGS)') | sha256sum | cut -c1-16)
NODE_BIN = $(KAS_CACHE)/$(1)-$(call NODE_KEY,$(1))
NODE_BINS := $(foreach t,$(NODE_TOOLS),$(call NODE_BIN,$(t)))

define node_tool_rule
$(call NODE_BIN,$(1)):
	mkdir -p $(KAS_CACHE)
	$(GO) -C tools/kubenode build -trimpath -ldflags '-s -w $(KAS_VERSION_LDFLAGS)' -o $$@.tmp ./$(1)
	mv $$@.tmp $$@
endef
$(foreach t,$(NODE_TOOLS),$(eval $(call node_tool_rule,$(t))))

# kubectl, what a user runs on a machine in the real-node tests, from
# tools/kubectl (a module of its own), cached the same way.
KUBECTL_KEY := $(shell (cat tools/kubectl/go.mod tools/kubectl/go.sum tools/kubectl/main.go; echo '$(KAS_VERSION_LDFLAGS)') | sha256sum | cut -c1-16)
KUBECTL     := $(KAS_CACHE)/kubectl-$(KUBECTL_KEY)
$(KUBECTL):
	mkdir -p $(KAS_CACHE)
	$(GO) -C tools/kubectl build -trimpath -ldflags '-s -w $(KAS_VERSION_LDFLAGS)' -o $@.tmp .
	mv $@.tmp $@

node-tools: $(NODE_BINS) $(KUBECTL)

# The directory the tests find the node tools in (NODE_TOOLS_DIR): links
# named plainly, since kubeadm looks for kubelet on PATH.
NODE_TOOLS_DIR := $(CURDIR)/bin/kubenode
node-tools-dir: $(NODE_BINS) $(KUBECTL)
	mkdir -p $(NODE_TOOLS_DIR)
	$(foreach t,$(NODE_TOOLS),ln -sf $(call NODE_BIN,$(t)) $(NODE_TOOLS_DIR)/$(t);)
	ln -sf $(KUBECTL) $(NODE_TOOLS_DIR)/kubectl

print-node-tools-dir:
	@echo $(NODE_TOOLS_DIR)

vet: assets
	$(GO) vet ./...

# Tests run PARALLEL at once in each package, one per core: four per core
# made the full suite slower here (the browser and Helm tests contend for
# the CPUs until their deadlines pass), not faster. The fast lane's tests
# mostly wait on PostgreSQL and HTTP, so it runs four per core.
PARALLEL ?= $(shell nproc)
FAST_PARALLEL ?= $(shell echo $$(( 4 * $$(nproc) )))
TEST_ENV  = MAILPIT=$(CURDIR)/bin/mailpit STRIPE_MOCK=$(CURDIR)/bin/stripe-mock VICTORIA_METRICS=$(CURDIR)/bin/victoria-metrics
# The image the container and chart tests run ('make image'), and a second
# build of it (VERSION-next) that the chart test upgrades to.
IMAGE_ENV = KUBEBYON_IMAGE=$(IMAGE):$(VERSION) KUBEBYON_IMAGE_ARCHIVE=$(CURDIR)/$(IMAGE_ARCHIVE) \
	KUBEBYON_IMAGE_NEXT=$(IMAGE):$(VERSION)-next KUBEBYON_IMAGE_ARCHIVE_NEXT=$(CURDIR)/$(subst _linux_,-next_linux_,$(IMAGE_ARCHIVE)) CONTAINERS_CONF=$(CURDIR)/tools/containers.conf
# One PostgreSQL for every test binary of the run, instead of one each
# (internal/testenv/testpg).
TESTPG    = $(GO) run ./internal/testenv/testpg

# The test binaries are linked without DWARF (-ldflags=-w: a third less
# link time; stack traces do not need it), and go test's own vet is off
# (-vet=off): 'make vet', part of 'make test', runs every analyzer.
TEST_FLAGS = -vet=off -ldflags=-w

test-go: assets bin/mailpit bin/stripe-mock bin/victoria-metrics $(KAS) node-tools-dir image
	$(MAKE) -s image VERSION='$(VERSION)-next'
	$(TEST_ENV) $(IMAGE_ENV) KUBE_APISERVER=$(KAS) NODE_TOOLS_DIR=$(NODE_TOOLS_DIR) $(TESTPG) $(GO) test $(TEST_FLAGS) -count=1 -parallel $(PARALLEL) -timeout 25m ./...

# The edit-test loop: every test that needs neither Chromium nor a
# kube-apiserver or kubelet (-short skips those, saying so), without
# building either. make test runs them all, and CI runs make test.
# It keeps go test's cache, so that a run after an edit reruns only the
# packages the edit reaches: its PostgreSQL keeps FAST_PGDIR, so that the
# database URL, part of the cache's key, stays the same from run to run.
FAST_PGDIR ?= /tmp/kubebyon-fastpg-$(shell id -u)
test-fast: assets bin/mailpit bin/stripe-mock bin/victoria-metrics
	$(TEST_ENV) $(TESTPG) -dir $(FAST_PGDIR) $(GO) test $(TEST_FLAGS) -short -parallel $(FAST_PARALLEL) -timeout 10m ./...

test: check-generated check-format vet build test-go

clean:
	rm -rf bin dist static/dist node_modules

# Runs every fuzz target for FUZZTIME each (their seed corpora already run
# in 'make test').
FUZZTIME ?= 30s
fuzz: assets
	@grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u | while read -r pkg; do \
		for target in $$(grep -h '^func Fuzz' $$pkg/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
			echo "fuzz $$pkg $$target"; \
			$(GO) test -run='^$$' -fuzz="^$$target\$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

# Benchmarks that need the whole platform (figures go in closing notes).
bench: assets $(KAS)
	KUBE_APISERVER=$(KAS) $(GO) test -run='^$$' -bench=. -benchtime=1x -timeout 30m ./bench/
