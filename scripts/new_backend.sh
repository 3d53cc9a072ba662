#!/usr/bin/env bash
# Starts a new backend as a copy of platform/skeleton (platform/skeleton/README.md).
#
#   scripts/new_backend.sh <name> [<dest dir>]
#
# Copies platform/skeleton to platform/<name> (or to <dest dir>, for a
# backend built outside Rill's tree against an installed Rill) and renames
# it: files skeleton_* -> <name>_*, Skeleton -> <Name> (CamelCase: my_gpu ->
# MyGpu, so kSkeletonPlatformId -> kMyGpuPlatformId), skeleton -> <name>,
# SKELETON -> <NAME>; the `SKELETON:` markers where real code goes become
# `TODO(<name>):`, and the lines that keep the template itself out of Rill's
# tools and package (between `>>> template only` and `<<< template only`) are
# left out. <name> is [a-z][a-z0-9_]*: it is also the platform's name,
# its file prefix and its CMake target, rill::<name>. Exits 2 on a bad name or
# an existing destination, with nothing copied.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/platform/skeleton"

die() {
  echo "new_backend.sh: $*" >&2
  exit 2
}

[[ $# -ge 1 && $# -le 2 ]] || die "usage: scripts/new_backend.sh <name> [<dest dir>]"
name="$1"
[[ "$name" =~ ^[a-z][a-z0-9_]*$ ]] \
  || die "'$name' is not a backend name: use [a-z][a-z0-9_]* (lower case, e.g. mine or my_gpu)"
[[ "$name" != skeleton ]] || die "'skeleton' is the template itself: pick another name"
# Names Rill's package already uses for a target (rill::<name>) or a platform.
for taken in core host cuda opencl testing conformance engine tensor ops graph graph_onnx io \
    kvstore train openblas blis onednn xnnpack fftw philox philox_cl clblast clfft cublas curand \
    cufft cudnn; do
  [[ "$name" != "$taken" ]] || die "'$name' is taken: rill::$name is already a Rill target; pick another name"
done
dest="${2:-$ROOT/platform/$name}"
[[ ! -e "$dest" ]] || die "$dest already exists: pick another name or destination"
[[ -d "$SRC" ]] || die "no template at $SRC"

# my_gpu -> MyGpu; MY_GPU for macros and include guards.
camel=""
IFS=_ read -ra parts <<<"$name"
for part in "${parts[@]}"; do camel+="${part^}"; done
upper="${name^^}"

mkdir -p "$(dirname "$dest")"
mkdir "$dest" || die "cannot create $dest"
trap 'rm -rf "$dest"' EXIT  # Nothing half-copied is left behind.
for file in "$SRC"/*; do
  [[ -f "$file" ]] || continue
  base="$(basename "$file")"
  sed -e "/>>> template only/,/<<< template only/d" -e "s/SKELETON:/TODO($name):/g" \
      -e "s/Skeleton/$camel/g" -e "s/skeleton/$name/g" -e "s/SKELETON/$upper/g" \
      "$file" >"$dest/${base//skeleton/$name}"
done
trap - EXIT

echo "new_backend.sh: created $dest: platform '$name', target rill::$name, class ${camel}Platform"
echo "Next:"
if [[ "$(cd "$dest" && pwd -P)" == "$(cd "$ROOT/platform" && pwd -P)/$name" ]]; then
  echo "  1. add to $ROOT/CMakeLists.txt, after the other backends:"
  echo "       add_subdirectory(platform/$name)"
  echo "  2. build and test it:"
  echo "       cmake --build build --target ${name}_conformance_test && ctest --test-dir build/platform/$name"
else
  echo "  1. build it against an installed Rill (cmake --install <rill build> --prefix <prefix>):"
  echo "       cmake -S $dest -B $dest/build -DCMAKE_PREFIX_PATH=<prefix>"
  echo "       cmake --build $dest/build && ctest --test-dir $dest/build"
fi
echo "  then fill in the TODO($name) markers (grep -rn 'TODO($name)' $dest), in the order of"
echo "  $dest/README.md"
