#!/usr/bin/env bash
# The steps of 'make release VERSION=vX.Y.Z' that are not the build itself
# (the Makefile builds the binaries, with the same flags as 'make build').
# Run from the repository's root:
#
#   tools/release.sh check VERSION      VERSION is vMAJOR.MINOR.PATCH and
#                                       CHANGELOG.md has a '## VERSION' section
#   tools/release.sh checksums VERSION  dist/SHA256SUMS of dist/kubebyon_VERSION_*
#   tools/release.sh chart VERSION      the Helm chart's appVersion is VERSION
#                                       (when the chart is there), and so is
#                                       the compose files' default image tag
set -euo pipefail

changelog=CHANGELOG.md
dist=dist
chart=deployments/helm/kubebyon/Chart.yaml
compose_files=(deployments/single-node/compose.yaml deployments/multi-node/compose.yaml)

die() {
	echo "release: $*" >&2
	exit 1
}

# check_version refuses anything but vMAJOR.MINOR.PATCH (no leading zeros,
# no pre-release or build suffix), then wants the release's notes.
check_version() {
	local version=$1
	if ! [[ $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$ ]]; then
		die "VERSION \"$version\" is not like vMAJOR.MINOR.PATCH: run 'make release VERSION=v1.2.3'"
	fi
	[ -f "$changelog" ] || die "$changelog is missing"
	# The version holds only digits, dots and the v: escape the dots.
	if ! grep -Eq "^## ${version//./\\.}( |$)" "$changelog"; then
		die "$changelog has no '## $version' section: move what 'Unreleased' lists under '## $version ($(date -u +%Y-%m-%d))' first"
	fi
	echo "release $version: version and $changelog section ok"
}

# checksums writes dist/SHA256SUMS (sha256sum's format, 'sha256sum -c'
# checks it) for this version's binaries.
checksums() {
	local version=$1 files=()
	local f
	for f in "$dist/kubebyon_${version}_"*; do
		if [ -f "$f" ]; then
			files+=("${f#"$dist"/}")
		fi
	done
	[ ${#files[@]} -gt 0 ] || die "no binaries dist/kubebyon_${version}_*: build them first (make release VERSION=$version)"
	(cd "$dist" && sha256sum -- "${files[@]}" >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
	echo "release $version: $dist/SHA256SUMS lists ${files[*]}"
}

# set_chart_version makes the chart's appVersion the release's (added when
# the chart has none); without the chart there is nothing to do.
set_chart_version() {
	local version=$1
	if [ ! -f "$chart" ]; then
		echo "release $version: no Helm chart at $chart; no appVersion to set"
		return
	fi
	awk -v v="$version" '
		/^appVersion:/ { print "appVersion: \"" v "\""; done = 1; next }
		{ print }
		END { if (!done) print "appVersion: \"" v "\"" }
	' "$chart" >"$chart.tmp"
	mv "$chart.tmp" "$chart"
	echo "release $version: $chart appVersion is \"$version\""
	set_compose_tag "$version"
}

# set_compose_tag makes the release the compose files' default image tag:
# ghcr.io/kubebyon/kubebyon:${KUBEBYON_VERSION:-VERSION}.
set_compose_tag() {
	local version=$1 f
	for f in "${compose_files[@]}"; do
		[ -f "$f" ] || continue
		sed -E 's#(ghcr\.io/kubebyon/kubebyon:\$\{KUBEBYON_VERSION:-)[^}]*\}#\1'"$version"'}#' "$f" >"$f.tmp"
		mv "$f.tmp" "$f"
		echo "release $version: $f's default image tag is $version"
	done
}

[ $# -eq 2 ] || die "usage: tools/release.sh check|checksums|chart VERSION"
case $1 in
check) check_version "$2" ;;
checksums) checksums "$2" ;;
chart) set_chart_version "$2" ;;
*) die "unknown step \"$1\": use check, checksums or chart" ;;
esac
