#!/bin/sh
# Real machines joining Kamaji clusters through the edge, with the platform
# as users run it (issue 34): five machines one after the other (join to
# Ready, and to a first pod Running: medians), ten machines joining ten
# clusters at once (until the last is Ready), and kubebyon serve's CPU and
# memory during those joins against as long with none. The benchmark is
# BenchmarkRealNodeJoin (cmd/kubebyon/realnode_bench_test.go); it needs
# root, as the real-node tests do.
set -eu
cd "$(dirname "$0")/.."
make -s assets bin/mailpit bin/stripe-mock bin/victoria-metrics kube-apiserver node-tools-dir
export MAILPIT="$PWD/bin/mailpit" STRIPE_MOCK="$PWD/bin/stripe-mock" VICTORIA_METRICS="$PWD/bin/victoria-metrics"
KUBE_APISERVER="$(make -s print-kube-apiserver)"
NODE_TOOLS_DIR="$(make -s print-node-tools-dir)"
export KUBE_APISERVER NODE_TOOLS_DIR
exec go test -count=1 -run '^$' -bench 'RealNodeJoin' -benchtime 1x -timeout 40m ./cmd/kubebyon/
