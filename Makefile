# linerate — build, test and demo. `make demo` and `make test` install what
# is missing on a fresh Debian / Ubuntu / Raspberry Pi OS machine first.

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X linerate/internal/version.Version=$(VERSION)
BIN      := bin/linerate
# The small build, for routers' flash (OpenWrt's arm and mips packages):
# -tags small leaves out what a router never runs (cmd/linerate/small.go
# lists it; docs/openwrt.md weighs it), and the compiler inlines only in
# the packages of the packet path (the runtime, the traffic engine and the
# system calls under it): inlining elsewhere buys no speed a router
# notices, and costs flash.
SMALL_TAGS    := small
SMALL_GCFLAGS := -gcflags=all=-l -gcflags=runtime= -gcflags=linerate/traffic/...= -gcflags=syscall= \
	-gcflags=golang.org/x/sys/unix= -gcflags=internal/poll=
SMALL_BUILD    = CGO_ENABLED=0 $(GO) build -tags $(SMALL_TAGS) $(SMALL_GCFLAGS) -trimpath -ldflags '$(LDFLAGS)'
# Debian packages the tests and benchmarks use: ethtool and iproute2 to
# cross-check what linerate reads, nftables for the lab's NAT, iperf3,
# iperf (2), nuttcp, sockperf and netsniff-ng (trafgen) for side-by-side
# benchmarks and the iperf3 interoperability tests, OpenSSH's server and
# client for the tests of reaching hosts over ssh, chromium to open the
# HTML report headless in its test, prometheus to scrape the metrics for
# real, lintian and systemd (systemd-analyze) to check the packages and
# units, busybox (ash) to run the OpenWrt scripts, tuned for its profile
# loader; for lab nodes that are virtual machines (lab up --vm): QEMU, the
# kernel the guests boot, a static busybox for their initramfs (it also
# provides ash), qemu-img for their disks, and mmdebstrap and e2fsprogs to
# build the Debian guest image; podman and runc to run the agent's OCI image
# (make image) in a lab namespace, and dnsmasq-base (the program without
# its service, so nothing listens on the machine) to serve plan hosts by DNS.
DEB_PKGS := ethtool iproute2 nftables iperf3 iperf nuttcp sockperf netsniff-ng pciutils openssh-server openssh-client chromium jq prometheus lintian systemd busybox-static tuned \
	qemu-system-x86 qemu-utils linux-image-amd64 mmdebstrap e2fsprogs \
	podman runc dnsmasq-base
# Per package: internal/drivertest boots QEMU guests under TCG (about 7
# minutes here, a Debian image built the first time included).
TEST_TIMEOUT ?= 20m

.PHONY: all build small deps test test-short fuzz fuzz-short demo demo-smoke release image bench bench-rate soak clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/linerate

# small builds the small binary for this machine (bin/linerate-small).
small:
	$(SMALL_BUILD) -o $(BIN)-small ./cmd/linerate

# deps installs missing Debian packages (only when running as root with apt)
# and downloads Go modules.
deps:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "note: missing packages:$$missing (install them as root for the full test suite)"; fi; \
	fi
	$(GO) mod download

test: deps build
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt: not formatted: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	@# -p 1: one package's tests at a time. The traffic, tune and command
	@# tests measure real flows on this machine's few cores; two packages at
	@# once starve each other's samples and windows (flaky, not faster).
	$(GO) test -p 1 -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(MAKE) --no-print-directory fuzz-short
	@out=$$(mktemp -d) && $(MAKE) --no-print-directory release OUT=$$out && sh packaging/check.sh $$out && sh packaging/ipk-check.sh $$out; rc=$$?; rm -rf $$out; exit $$rc

# Fuzz targets (PACKAGE:TARGET): every text parser, the capture reader and
# the control protocol decoder.
# Their seed corpora are the real outputs under testdata/ (f.Add) and the
# crashers found so far (testdata/fuzz/TARGET/, run by every go test).
FUZZ_TARGETS := ./source/ethtool:FuzzParsers ./source/procfs:FuzzParsers \
	./source/sysfs:FuzzThrottled ./source/sysfs:FuzzResolve ./source/pci:FuzzConfig \
	./source/cpuset:FuzzSets ./source:FuzzIPLink ./source:FuzzExtract \
	./traffic:FuzzControlRead ./traffic:FuzzControlSizes ./traffic:FuzzServerHandshake ./iperf3:FuzzDecode
FUZZ_TARGETS += ./tune:FuzzBootValue ./plan:FuzzMatrixCounts ./internal/jsonbudget:FuzzBudget \
	./internal/jsonbudget:FuzzCheck
FUZZTIME ?= 1m
FUZZTIME_SHORT ?= 2000x

# fuzz-short runs each target for FUZZTIME_SHORT (make test): a count of
# executions, not a duration — a duration's deadline can race a busy
# worker in Go's fuzzing coordinator and fail the target with "context
# deadline exceeded" and no input (seen here once under load, FuzzResolve);
# fuzz for FUZZTIME (make fuzz FUZZTIME=10m). A crasher lands in the package's
# testdata/fuzz/: keep it there as a regression seed once fixed.
# -fuzzminimizetime is short: minimising a new 4 KiB input for the default
# minute would take the whole run.
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME_SHORT)

fuzz:
	@for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; fn=$${t#*:}; echo "fuzz $$pkg $$fn ($(FUZZTIME))"; \
	  out=$$($(GO) test -run='^$$' -fuzz="^$$fn\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=1s $$pkg 2>&1) || { echo "$$out"; exit 1; }; \
	done

# test-short runs only the tests that need neither root nor namespaces.
test-short:
	$(GO) test -short -count=1 ./...

# demo is the main job: a NAT router lab, the seeds' experiments through it,
# each beside its ceiling, then diagnose and tune auto on the router with a
# before/after table; every change undone and the lab removed at the end
# (DEMO_FLAGS=--quick for 1 s per measurement). `make test` runs the same as a smoke test
# (TestDemo in cmd/linerate: --quick, then Ctrl-C mid-run, nothing left).
demo: deps build
	@if [ "$$(id -u)" != 0 ]; then echo "make demo needs root (it builds network namespaces): try sudo make demo"; exit 2; fi
	./$(BIN) demo $(DEMO_FLAGS)

# demo-smoke is the demo with short durations, without installing anything.
demo-smoke: build
	@if [ "$$(id -u)" != 0 ]; then echo "make demo-smoke needs root (it builds network namespaces): try sudo make demo-smoke"; exit 2; fi
	./$(BIN) demo --quick

# release cross-builds the static binaries and, where dpkg-deb is, the
# .deb packages (binary, man pages, completions, the agent's systemd unit);
# and the OpenWrt packages (.ipk: binary, procd init script, UCI config)
# from the full arm64 and amd64 binaries and small builds for 32-bit arm
# and mips (packaging/ipk.sh; docs/openwrt.md).
OUT ?= dist
release:
	@mkdir -p $(OUT)
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(OUT)/linerate-linux-amd64 ./cmd/linerate
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(OUT)/linerate-linux-arm64 ./cmd/linerate
	CGO_ENABLED=0 GOOS=linux GOARCH=arm GOARM=7 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(OUT)/linerate-linux-armv7 ./cmd/linerate
	GOOS=linux GOARCH=arm GOARM=7 $(SMALL_BUILD) -o $(OUT)/linerate-small-linux-armv7 ./cmd/linerate
	GOOS=linux GOARCH=mipsle GOMIPS=softfloat $(SMALL_BUILD) -o $(OUT)/linerate-small-linux-mipsle ./cmd/linerate
	GOOS=linux GOARCH=mips GOMIPS=softfloat $(SMALL_BUILD) -o $(OUT)/linerate-small-linux-mips ./cmd/linerate
	@# .deb packages for amd64, arm64 and armhf from the binaries above
	@# (packaging/deb.sh); make test checks them (packaging/check.sh).
	@if command -v dpkg-deb >/dev/null; then sh packaging/deb.sh '$(VERSION)' $(OUT); \
	  else echo "note: no dpkg-deb: no .deb packages"; fi
	@# .ipk packages for OpenWrt (packaging/ipk.sh); make test checks them
	@# (packaging/ipk-check.sh).
	sh packaging/ipk.sh '$(VERSION)' $(OUT)
	@ls -l $(OUT)

# image writes the agent's OCI images, $(OUT)/linerate_VERSION_{amd64,arm64}.oci.tar:
# the static binaries on an empty base, built without a daemon or root
# (packaging/image, a Go program; docs/kubernetes.md). podman load -i FILE.
IMAGE_SOURCE ?= $(shell git config --get remote.origin.url 2>/dev/null)
image:
	@mkdir -p $(OUT)
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(OUT)/linerate-linux-amd64 ./cmd/linerate
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(OUT)/linerate-linux-arm64 ./cmd/linerate
	$(GO) run ./packaging/image -version '$(VERSION)' -out $(OUT) -source '$(IMAGE_SOURCE)' \
	  -revision "$$(git rev-parse HEAD 2>/dev/null)" -created "$$(git log -1 --format=%ct 2>/dev/null || echo 0)"

bench: build
	bash bench/compare.sh

# bench-rate: how closely each engine holds an asked rate (bench/rate.sh).
bench-rate: build
	bash bench/rate.sh

# soak runs one serve under repeated benches for SOAK_MINUTES (default 10)
# and prints its memory and thread count every 30 s (bench/soak.sh).
soak: build
	bash bench/soak.sh

clean:
	rm -rf bin dist
