# CNI reference plugins in TypeScript — build, install, lint and test.
# `make test` is the one command CI runs (.ci/run); it installs what it needs, builds, runs the unit
# tests and the netns integration tests, and ends with `N passed, N failed, N skipped`.

SHELL := /bin/bash
BUN := node_modules/.bin/bun
TSC := node_modules/.bin/tsc
# The architecture built for (Debian/Go names, as in upstream's tarball names): the host's, or
# ARCH=arm64 / ARCH=amd64 for the other one, cross-built (docs/install.md, Architectures).
HOST_ARCH := $(shell uname -m | sed -e s/x86_64/amd64/ -e s/aarch64/arm64/)
ARCH ?= $(HOST_ARCH)
ifeq ($(filter amd64 arm64,$(ARCH)),)
$(error ARCH=$(ARCH): this build targets amd64 and arm64 only (docs/install.md, Architectures))
endif
# The host's build goes to dist/bin (where the tests look); another architecture's to dist/<arch>/bin.
dist_of = $(if $(filter $(HOST_ARCH),$(1)),dist/bin,dist/$(1)/bin)
DIST := $(call dist_of,$(ARCH))
BINARY := $(DIST)/cni-plugins
# The exec shim (shim/cni-shim.c, docs/resident.md): what every plugin name in $(DIST) is a hard link to.
SHIM := $(DIST)/cni-plugins-shim
SHIM_SOURCE := shim/cni-shim.c
# The Bun runtime the executable embeds (build/bun-runtime.sh): amd64 pins the baseline build, for
# every x86-64-v2 CPU; build/check-x86-64-v2.sh fails the build if the result needs more.
BUN_TARGET_amd64 := bun-linux-x64-baseline
BUN_TARGET_arm64 := bun-linux-aarch64
# The shim's compiler: the host's for the host, a cross compiler (Debian's gcc-<triplet>) otherwise.
CROSS_CC_amd64 := x86_64-linux-gnu-gcc
CROSS_CC_arm64 := aarch64-linux-gnu-gcc
CC ?= cc
SHIM_CC := $(if $(filter $(HOST_ARCH),$(ARCH)),$(CC),$(CROSS_CC_$(ARCH)))
SHIM_CFLAGS := -static -Os -s -Wall -Wextra -Werror -fno-asynchronous-unwind-tables
DESTDIR ?=
BINDIR ?= /opt/cni/bin
SYSTEMDDIR ?= /etc/systemd/system
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo unknown)
PLUGINS = $(shell $(BUN) build/list-plugins.ts 2>/dev/null)
SOURCES := $(shell find cli registry operator agent shared plugins ipam meta -name '*.ts' ! -name '*.test.ts' 2>/dev/null)
# Shared by the shim and the agent of one build: the agent serves only shims of its own build, and
# the same sources for another architecture are another build.
BUILD_ID := $(shell (cat $(sort $(SOURCES)) $(SHIM_SOURCE) package-lock.json 2>/dev/null; echo $(ARCH)) | sha256sum | cut -c1-16)
# Release artifacts (deploy/), of every architecture: dist/*.tgz, dist/*.deb, dist/SHA256SUMS.
RELEASE_DIR := dist
IMAGE_NAME ?= localhost/cni-plugins-ts
IMAGE_CONTEXT := dist/image
# Compile flags of the multi-call binary; `make bench` builds its hello-world floor with the same.
# --compile-jit-policy=10: a plugin lives tens of milliseconds, JIT tier-up mostly costs compile
# threads and code memory (docs/performance.md: 7-9 % faster, 3 MB less on a bridge ADD).
COMPILE_FLAGS := --compile --bytecode --splitting --format=esm --minify-syntax --no-compile-autoload-dotenv --no-compile-autoload-bunfig --compile-jit-policy=10

.PHONY: all deps build install dist deb image lint test test-unit test-integration test-vm test-e2e test-diff test-arm64 demo bench clean

all: build

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

deps: node_modules/.installed

build: $(BINARY)

# The multi-call executable (entries: cli/entry.ts, and agent/worker.ts for the agent's threads)
# on the pinned runtime, the shim, and one hard link to the shim per plugin name.
$(BINARY): node_modules/.installed $(SOURCES) $(SHIM_SOURCE) Makefile build/bun-runtime.sh build/check-x86-64-v2.sh
	@mkdir -p $(DIST)
	runtime=$$(bash build/bun-runtime.sh $(BUN_TARGET_$(ARCH))) && \
	$(BUN) build $(COMPILE_FLAGS) --target=$(BUN_TARGET_$(ARCH)) --compile-executable-path="$$runtime" \
		--define 'CNI_BUILD_VERSION="$(VERSION)"' --define 'CNI_BUILD_ID="$(BUILD_ID)"' \
		cli/entry.ts agent/worker.ts --outfile $(BINARY)
	$(if $(filter amd64,$(ARCH)),bash build/check-x86-64-v2.sh $(BINARY) || { rm -f $(BINARY); exit 1; })
	$(SHIM_CC) $(SHIM_CFLAGS) -DCNI_BUILD_ID='"$(BUILD_ID)"' -o $(SHIM) $(SHIM_SOURCE)
	@rm -f $(filter-out $(BINARY) $(SHIM),$(wildcard $(DIST)/*))
	@for p in $$($(BUN) build/list-plugins.ts); do ln -f $(SHIM) $(DIST)/$$p; done
	@echo "built $(BINARY) and $(SHIM) (build $(BUILD_ID)) with links: $$(cd $(DIST) && ls | grep -v '^cni-plugins' | tr '\n' ' ')"

# The executable, the shim and a link to the shim per plugin name into BINDIR; the systemd units of
# the resident agent (cni-plugins.{service,socket}, cni-plugins-dhcp.socket) and of the dhcp daemon
# (cni-dhcp.{service,socket}) into SYSTEMDDIR, none enabled; then the command that enables the agent.
UNITS := $(notdir $(wildcard deploy/systemd/*.service deploy/systemd/*.socket))
install: build
	install -d $(DESTDIR)$(BINDIR)
	install -m 0755 $(BINARY) $(DESTDIR)$(BINDIR)/cni-plugins
	install -m 0755 $(SHIM) $(DESTDIR)$(BINDIR)/cni-plugins-shim
	@for p in $$($(BUN) build/list-plugins.ts); do ln -f $(DESTDIR)$(BINDIR)/cni-plugins-shim $(DESTDIR)$(BINDIR)/$$p; done
	install -d $(DESTDIR)$(SYSTEMDDIR)
	@for u in $(UNITS); do sed 's#/opt/cni/bin/#$(BINDIR)/#g' deploy/systemd/$$u > $(DESTDIR)$(SYSTEMDDIR)/$$u && chmod 0644 $(DESTDIR)$(SYSTEMDDIR)/$$u; done
	@echo "the resident agent (docs/resident.md) is not enabled; to enable it: systemctl enable --now cni-plugins.socket"

# dist/cni-plugins-ts-linux-$(ARCH)-$(VERSION).tgz (extract into /opt/cni/bin) + dist/SHA256SUMS.
dist: build
	@bash deploy/dist.sh $(BINARY) $(VERSION) $(ARCH) $(RELEASE_DIR) $(PLUGINS)

# dist/cni-plugins-ts_<version>_$(ARCH).deb: /usr/lib/cni, replaces Debian's containernetworking-plugins.
deb: build
	@bash deploy/deb.sh $(BINARY) $(VERSION) $(ARCH) $(RELEASE_DIR) $(PLUGINS)

# The installer image of deploy/daemonset.yaml, FROM scratch, built offline with podman: one manifest
# list of linux/amd64 and linux/arm64 (each architecture's build), $(IMAGE_NAME):$(VERSION) and
# :latest, and its OCI archive in $(RELEASE_DIR) (deploy/image.sh).
IMAGE_ARCHES := amd64 arm64
image: node_modules/.installed
	@for a in $(IMAGE_ARCHES); do $(MAKE) --no-print-directory build ARCH=$$a || exit 1; done
	@bash deploy/image.sh $(IMAGE_NAME) $(VERSION) $(IMAGE_CONTEXT) $(RELEASE_DIR) $(foreach a,$(IMAGE_ARCHES),$(a)=$(call dist_of,$(a))/cni-plugins)

lint: node_modules/.installed
	$(TSC) --noEmit -p .
	$(BUN) build/lint-layers.ts

test-unit: node_modules/.installed
	$(BUN) test/run.ts unit

test-integration: build
	$(BUN) test/run.ts integration

# The *.vm.test.ts files in a QEMU VM with Debian's stock kernel (test/vm/README.md); root.
test-vm: build
	$(BUN) test/run.ts vm

# Real runtimes (cnitool, podman, containerd) and mixed Go/ours interop (test/e2e); root.
test-e2e: build
	@bash test/setup-host.sh
	$(BUN) test/run.ts e2e

# Differential suite against the Go 1.1.1 binaries (test/e2e/diff.test.ts, DIFFERENCES.md); root.
test-diff: build
	@bash test/setup-host.sh
	$(BUN) test/run.ts diff

# The arm64 build under qemu-user against the host's amd64 build (test/run.ts, arm64); root.
test-arm64: build
	@bash test/setup-host.sh
	@$(MAKE) --no-print-directory build ARCH=arm64
	$(BUN) test/run.ts arm64

# Everything: system packages, build (amd64 and arm64), unit + integration + VM + e2e + diff + arm64
# lanes; last line is the summary. As a normal user the root lanes run through one sudo (or are reported as not run); see
# README.md, Commands.
test:
	@bash test/setup-host.sh
	@$(MAKE) --no-print-directory deps build
	@$(MAKE) --no-print-directory build ARCH=arm64
	@$(BUN) test/run.ts all

# Two throwaway containers on a bridge network, pinged, then torn down (test/demo/demo.ts); root.
demo:
	@bash test/setup-host.sh
	@$(MAKE) --no-print-directory deps build
	@$(BUN) test/demo/demo.ts

# Ours next to the Go 1.1.1 binaries, every scenario of docs/performance.md, one table at the end; root.
bench: build
	@bash test/setup-host.sh
	@bash test/e2e/setup/prepare.sh
	CNI_BENCH_COMPILE_FLAGS="$(COMPILE_FLAGS)" $(BUN) test/bench/run.ts

clean:
	rm -rf dist .test-out
