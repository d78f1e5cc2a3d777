#!/usr/bin/env bash
# The container image without a registry: 'make image' runs this from the
# repository's root. The Dockerfile names three base images (Node.js for
# the front-end packages, Go for the build, Debian for the image itself);
# where no registry serves them, this script makes them from Debian's own
# packages and the Go module proxy, then builds the Dockerfile as
# 'docker build' would, with buildah:
#
#   tools/image.sh bases           the base images, made once per inputs
#   tools/image.sh build VERSION   the image, tagged IMAGE:VERSION in the
#                                  local store (podman and buildah share it)
#                                  and written to dist/ as an OCI archive
#
# The base images are cached in the local store, keyed by their inputs
# (the code that makes each, the Debian suite, Go's version from go.mod,
# the Node.js major version) as the kube-apiserver build is: a label on each holds its
# key, and a base whose key matches is not made again. buildah's layer
# cache then keeps the Dockerfile's package steps between builds.
#
# Needs mmdebstrap, buildah, podman and runc (Debian packages; .ci/run
# installs them). podman's default rlimits cannot be applied on these
# machines and crun cannot run on their cgroup v1 + v2 hybrid, so the
# containers.conf beside this script is used (CONTAINERS_CONF).
set -euo pipefail

IMAGE=${IMAGE:-ghcr.io/kubebyon/kubebyon}
DIST=${DIST:-dist}
SUITE=bookworm
NODE_MAJOR=20
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/tools/containers.conf}

die() {
	echo "image: $*" >&2
	exit 1
}

for tool in mmdebstrap buildah podman runc; do
	command -v "$tool" >/dev/null || die "$tool not found: install the Debian package '$tool' (.ci/run does)"
done

go_version=$(sed -n 's/^go \([0-9][0-9.]*\)$/\1/p' go.mod)
[ -n "$go_version" ] || die "go.mod has no 'go X.Y.Z' line"
go_minor=${go_version%.*}
arch=$(go env GOARCH)

# The names the Dockerfile's FROM lines give, as the local store keys them.
debian_base=docker.io/library/debian:$SUITE-slim
golang_base=docker.io/library/golang:$go_minor-$SUITE
node_base=docker.io/library/node:$NODE_MAJOR-$SUITE-slim

# key NAME is the input key of the base make_NAME makes: its own code and
# the versions it is made of.
key() {
	(
		declare -f "make_$1"
		echo "$SUITE $go_version $NODE_MAJOR $arch"
		# The others are made from the Debian base, and trust this
		# machine's own CAs.
		[ "$1" = debian ] || { declare -f make_debian trust_machine_cas; cat_machine_cas; }
	) | sha256sum | cut -c1-16
}

# replaced IMAGE: forget the image IMAGE named before it was made again (a
# base of other inputs), once nothing uses it.
replaced() {
	[ -z "$1" ] || podman rmi "$1" >/dev/null 2>&1 || true
}

# have IMAGE KEY: IMAGE is in the store with that input key.
have() {
	[ "$(podman image inspect --format '{{index .Labels "org.kubebyon.base-key"}}' "$1" 2>/dev/null)" = "$2" ]
}

# debian makes debian:bookworm-slim: a minbase root file system without
# documentation or translations, as Debian's own slim image is.
make_debian() {
	local k tmp old
	k=$(key debian)
	if have "$debian_base" "$k"; then
		echo "image: $debian_base is current (inputs $k)"
		return
	fi
	old=$(podman image inspect --format '{{.Id}}' "$debian_base" 2>/dev/null || true)
	tmp=$(mktemp -d)
	# What Debian's own images have: apt keeps no package it downloaded
	# (an 'apt-get install' layer holds what was installed, not the .debs
	# too), and fetches no translations.
	cat >"$tmp/docker-clean" <<-'EOF'
		DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
		APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
		Dir::Cache::pkgcache "";
		Dir::Cache::srcpkgcache "";
	EOF
	echo 'Acquire::Languages "none";' >"$tmp/docker-no-languages"
	echo "image: making $debian_base with mmdebstrap"
	# mmdebstrap's hooks get the root's path as $1: single quotes on purpose.
	# shellcheck disable=SC2016
	mmdebstrap --quiet --variant=minbase --include=ca-certificates \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-exclude=/usr/share/info/*' \
		--customize-hook="copy-in $tmp/docker-clean $tmp/docker-no-languages /etc/apt/apt.conf.d" \
		--customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
		"$SUITE" "$tmp/rootfs.tar"
	podman import --quiet \
		--change "LABEL org.kubebyon.base-key=$k" \
		--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		--change 'CMD ["bash"]' \
		"$tmp/rootfs.tar" "$debian_base" >/dev/null
	rm -rf "$tmp"
	replaced "$old"
}

# golang makes golang:X.Y-bookworm: Debian with make and Go at the version
# go.mod names, the toolchain as the Go module proxy serves it to
# GOTOOLCHAIN (golang.org/toolchain, checked against go.sum's database).
make_golang() {
	local k mod ctr old
	k=$(key golang)
	if have "$golang_base" "$k"; then
		echo "image: $golang_base is current (inputs $k)"
		return
	fi
	old=$(podman image inspect --format '{{.Id}}' "$golang_base" 2>/dev/null || true)
	echo "image: making $golang_base with Go $go_version"
	mod=$(go mod download -json "golang.org/toolchain@v0.0.1-go$go_version.linux-$arch" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -f "$mod/bin/go" ] || die "the Go $go_version toolchain did not download"
	ctr=$(buildah from --pull=never "$debian_base")
	trap 'buildah rm "$ctr" >/dev/null' RETURN
	buildah run "$ctr" -- sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends make >/dev/null && rm -rf /var/lib/apt/lists/*'
	trust_machine_cas "$ctr"
	buildah copy --quiet "$ctr" "$mod" /usr/local/go >/dev/null
	# Module zips keep no mode bits: the commands get theirs back as
	# GOTOOLCHAIN's own unpacking gives them.
	buildah run "$ctr" -- sh -c 'chmod -R u+w /usr/local/go && chmod a+x /usr/local/go/bin/* /usr/local/go/pkg/tool/*/* && /usr/local/go/bin/go version'
	buildah config \
		--env GOLANG_VERSION="$go_version" --env GOTOOLCHAIN=local --env GOPATH=/go \
		--env PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		--workingdir /go --label org.kubebyon.base-key="$k" "$ctr"
	buildah commit --quiet --rm "$ctr" "$golang_base" >/dev/null
	trap - RETURN
	replaced "$old"
}

# node makes node:20-bookworm-slim: Debian with this machine's Node.js and
# npm (Node.js comes from the npm registry's side of this machine, not from
# Debian, whose bookworm has Node.js 18).
make_node() {
	local k ctr node_bin npm_dir version old
	k=$(key node)
	if have "$node_base" "$k"; then
		echo "image: $node_base is current (inputs $k)"
		return
	fi
	node_bin=$(command -v node) || die "node not found: Node.js $NODE_MAJOR is needed for $node_base"
	version=$("$node_bin" --version)
	[[ $version == "v$NODE_MAJOR."* ]] || die "node is $version, not Node.js $NODE_MAJOR, so it cannot be $node_base"
	npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
	[ -f "$npm_dir/package.json" ] || die "npm's package directory was not found (from $(command -v npm))"
	old=$(podman image inspect --format '{{.Id}}' "$node_base" 2>/dev/null || true)
	echo "image: making $node_base with Node.js $version"
	ctr=$(buildah from --pull=never "$debian_base")
	trap 'buildah rm "$ctr" >/dev/null' RETURN
	trust_machine_cas "$ctr"
	buildah copy --quiet "$ctr" "$(readlink -f "$node_bin")" /usr/local/bin/node >/dev/null
	buildah copy --quiet "$ctr" "$npm_dir" /usr/local/lib/node_modules/npm >/dev/null
	buildah run "$ctr" -- sh -c 'ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx && node --version && npm --version'
	buildah config --env NODE_VERSION="${version#v}" --label org.kubebyon.base-key="$k" --cmd node "$ctr"
	buildah commit --quiet --rm "$ctr" "$node_base" >/dev/null
	trap - RETURN
	replaced "$old"
}

# The CAs this machine adds to Debian's (/usr/local/share/ca-certificates):
# where the registries are reached through a proxy of its own, the build
# steps must trust what the machine trusts. The image itself does not get
# them: only the builders do.
cat_machine_cas() {
	cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true
}

# trust_machine_cas CTR adds them to container CTR's trust store.
trust_machine_cas() {
	local crt
	for crt in /usr/local/share/ca-certificates/*.crt; do
		[ -f "$crt" ] || continue
		buildah copy --quiet "$1" "$crt" "/usr/local/share/ca-certificates/$(basename "$crt")" >/dev/null
	done
	buildah run "$1" -- update-ca-certificates >/dev/null
}

bases() {
	make_debian
	make_golang
	make_node
}

# build builds the Dockerfile into IMAGE:VERSION and the OCI archive
# dist/kubebyon_VERSION_linux_ARCH.oci.tar. The Go and npm caches of this
# machine are lent to the build's steps (as BuildKit's cache mounts would
# be), so that a build after a small change compiles only what changed.
build() {
	local version=$1 archive start size gocache gomodcache npmcache
	start=$(date +%s)
	bases
	gocache=$(go env GOCACHE)
	gomodcache=$(go env GOMODCACHE)
	npmcache=$(npm config get cache)
	mkdir -p "$gocache" "$gomodcache" "$npmcache" "$DIST"
	archive="$DIST/kubebyon_${version}_linux_$arch.oci.tar"
	# Docker's image format, since OCI's has no HEALTHCHECK: podman then
	# reports the image's health. The archive is OCI's, which Kubernetes'
	# runtimes and registries take; it keeps everything but the health
	# check (the Helm chart has probes of its own).
	buildah bud --quiet --layers --pull=never --format docker \
		--build-arg VERSION="$version" \
		--volume "$gocache:/root/.cache/go-build" \
		--volume "$gomodcache:/go/pkg/mod" \
		--volume "$npmcache:/root/.npm" \
		--tag "$IMAGE:$version" . >/dev/null
	rm -f "$archive"
	podman save --quiet --format oci-archive --output "$archive" "$IMAGE:$version"
	size=$(podman image inspect --format '{{.Size}}' "$IMAGE:$version")
	echo "image: $IMAGE:$version, $((size / 1000000)) MB unpacked, $(($(stat -c %s "$archive") / 1000000)) MB as $archive, built in $(($(date +%s) - start)) s"
}

case ${1:-} in
bases) bases ;;
build)
	[ $# -eq 2 ] || die "usage: tools/image.sh build VERSION"
	build "$2"
	;;
*) die "usage: tools/image.sh bases|build VERSION" ;;
esac
