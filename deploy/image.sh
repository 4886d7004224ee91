#!/usr/bin/env bash
# `make image`: the installer image of deploy/daemonset.yaml as ONE manifest list with a platform
# per architecture (linux/amd64, linux/arm64), so a node of either pulls the same name. Built
# offline with podman: FROM scratch, no RUN, so no platform's code is executed while building.
#   OUT/cni-plugins-ts-image-VERSION.oci.tar  the manifest list (an OCI image index) with every
#       platform's image, named IMAGE:VERSION, in SHA256SUMS; to a registry with e.g.
#       `skopeo copy --all oci-archive:<file> docker://<registry>/cni-plugins-ts:VERSION`
#   IMAGE:VERSION-<arch>            each platform's image in podman's store
#   IMAGE:VERSION and IMAGE:latest  the host's platform (what `podman run IMAGE` runs here)
# podman keeps the list only while it writes the archive: podman 4.3 cannot list a store holding a
# manifest list of local images (`podman images` then fails).
# Usage: deploy/image.sh IMAGE VERSION CONTEXT OUT ARCH=BINARY...
set -euo pipefail
(( $# >= 5 )) || { echo "usage: $0 IMAGE VERSION CONTEXT OUT ARCH=BINARY..." >&2; exit 2; }
IMAGE=$1 VERSION=$2 CONTEXT=$3 OUT=$4
shift 4
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

rm -rf "$CONTEXT"
mkdir -p "$CONTEXT"
platforms=()
for pair in "$@"; do
  arch=${pair%%=*} binary=${pair#*=}
  bash "$HERE/image-rootfs.sh" "$binary" "$arch" "$CONTEXT/rootfs-$arch"
  platforms+=("linux/$arch")
done
cp "$HERE/Containerfile" "$CONTEXT/Containerfile"

# replace(NAME): remove the manifest list or image NAME if it exists
replace() {
  if podman manifest exists "$1"; then podman manifest rm "$1" >/dev/null; fi
  if podman image exists "$1"; then podman rmi -f "$1" >/dev/null; fi
}
instances=()
for platform in "${platforms[@]}"; do
  tag=$IMAGE:$VERSION-${platform#linux/}
  replace "$tag"
  podman build --pull=never --quiet --platform "$platform" --build-arg VERSION="$VERSION" -t "$tag" "$CONTEXT" >/dev/null
  instances+=("containers-storage:$tag")
done
HOST_ARCH=$(uname -m | sed -e s/x86_64/amd64/ -e s/aarch64/arm64/)
for tag in "$IMAGE:$VERSION" "$IMAGE:latest"; do
  replace "$tag"
  podman tag "$IMAGE:$VERSION-$HOST_ARCH" "$tag"
done

mkdir -p "$OUT"
ARCHIVE=$OUT/cni-plugins-ts-image-$VERSION.oci.tar
LIST=$IMAGE:$VERSION-list
replace "$LIST"
podman manifest create "$LIST" "${instances[@]}" >/dev/null
rm -f "$ARCHIVE"
pushed=0
podman manifest push --quiet --all "$LIST" "oci-archive:$ARCHIVE:$IMAGE:$VERSION" >/dev/null && pushed=1
podman manifest rm "$LIST" >/dev/null
(( pushed )) || { echo "image.sh: writing $ARCHIVE failed" >&2; exit 1; }
bash "$HERE/sha256sums.sh" "$OUT"
echo "image: $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1)), a manifest list of ${platforms[*]}; $IMAGE:$VERSION and :latest ($HOST_ARCH) and $IMAGE:$VERSION-<arch> in podman's store"
