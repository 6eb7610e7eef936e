#!/bin/bash
# Binaries built here, carried to a GPU machine that would otherwise build them (a cold build
# there takes about two minutes of a call's ten, and of the session's device time):
#   harness/tools/pack_binaries.sh [BINARY...]   pack (default: build/harness/kbit-harness)
#   harness/tools/pack_binaries.sh --unpack      unpack there (harness/gpu_batch.sh's `unpack`)
# Pack: each BINARY (a path under the repository root) is compressed into .khbin/<path>.xz;
# .khbin/sources lists the files a build reads (those that travel with a call, as git sees them
# here: tracked or untracked and not ignored, less results/, docs/ and *.md) and .khbin/manifest
# the hash of their contents and each binary's sha256. Carry .khbin (git-ignored; ~36 MB for
# kbit-harness, the carry limit is 64 MiB) and begin the batch with `unpack` instead of `build`.
# Unpack hashes the same files there (not its git metadata, which a copied tree may carry stale)
# and refuses (exit 3, nothing written) when one differs or is missing, or when a compiled source
# (harness/, variants/, reference/: *.cu, *.cuh, *.cpp, *.hpp, *.h, CMakeLists.txt) is there that
# the pack did not list. The source path compiled into the binary (KBIT_SOURCE_DIR: where it finds
# results/dispatch and the peers' runner) must be the machine's checkout path too
# (docs/gpu_machines.md, "A call without a build").
set -euo pipefail
cd "$(dirname "$0")/../.."
# Of the paths on stdin, the compiled sources under the three source folders, sorted.
compiled() {
  grep -E '^(harness|variants|reference)/(.*\.(cu|cuh|cpp|hpp|h)|(.*/)?CMakeLists\.txt)$' |
    LC_ALL=C sort
}
# The hash of the listed files' contents (names included).
contents() {
  tr '\n' '\0' < .khbin/sources | xargs -0 -r sha256sum | sha256sum | cut -d' ' -f1
}
if [ "${1:-}" = --unpack ]; then
  [ -f .khbin/manifest ] || {
    echo "unpack: no .khbin/manifest (pack with harness/tools/pack_binaries.sh, carry .khbin)" >&2
    exit 2
  }
  [ -f .khbin/sources ] || { echo "unpack: no .khbin/sources (pack again)" >&2; exit 2; }
  missing=$(while IFS= read -r f; do [ -f "$f" ] || echo "$f"; done < .khbin/sources)
  if [ -n "$missing" ]; then
    echo "unpack: the tree is not the one packed (listed files missing: $(echo $missing))" >&2
    exit 3
  fi
  here=$(contents)
  packed=$(sed -n 's/^sources //p' .khbin/manifest)
  if [ "$here" != "$packed" ]; then
    echo "unpack: the tree is not the one packed (a listed file differs:" \
      "sources $here here, $packed packed)" >&2
    exit 3
  fi
  extra=$(comm -23 <(find harness variants reference -type f 2>/dev/null | compiled) \
    <(compiled < .khbin/sources))
  if [ -n "$extra" ]; then
    echo "unpack: the tree is not the one packed (compiled sources the pack did not list:" \
      "$(echo $extra))" >&2
    exit 3
  fi
  while read -r kind path sum; do
    [ "$kind" = binary ] || continue
    mkdir -p "$(dirname "$path")"
    xz -dc ".khbin/$path.xz" > "$path.unpacking"
    echo "$sum  $path.unpacking" | sha256sum -c --quiet
    chmod +x "$path.unpacking" && mv "$path.unpacking" "$path"
    echo "unpacked $path"
  done < .khbin/manifest
  exit 0
fi
[ $# -gt 0 ] || set -- build/harness/kbit-harness
for b in "$@"; do
  [ -f "$b" ] && [ -x "$b" ] ||
    { echo "pack_binaries: $b is not an executable file (build it first)" >&2; exit 2; }
done
rm -rf .khbin && mkdir -p .khbin
git ls-files --cached --others --exclude-standard -- . ':!results' ':!docs' ':!*.md' |
  while IFS= read -r f; do [ -f "$f" ] && echo "$f"; done | LC_ALL=C sort > .khbin/sources
echo "sources $(contents)" > .khbin/manifest
for b in "$@"; do
  mkdir -p ".khbin/$(dirname "$b")"
  xz -T0 -6 -c "$b" > ".khbin/$b.xz"
  echo "binary $b $(sha256sum "$b" | cut -d' ' -f1)" >> .khbin/manifest
done
total=$(du -sb .khbin | cut -f1)
limit=$((60 * 1024 * 1024))
if [ "$total" -gt "$limit" ]; then
  echo "pack_binaries: .khbin holds $total bytes, over the $limit a call can carry" \
    "beside the rest" >&2
  exit 3
fi
echo "pack_binaries: $# binaries, $total bytes in .khbin, $(wc -l < .khbin/sources) source files"
