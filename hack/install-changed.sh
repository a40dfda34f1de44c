#!/usr/bin/env bash
# Moves each file of SRCDIR into DESTDIR when it differs from the file of
# the same name there, by a rename on DESTDIR's file system, and leaves
# identical files untouched. Generators (controller-gen) truncate and rewrite
# their outputs in place; installing through this makes a regeneration that
# changes nothing invisible to a build or a test reading the tree at the
# same time (CI runs test suites side by side).
#   hack/install-changed.sh SRCDIR DESTDIR
set -euo pipefail
src=$1 dest=$2
mkdir -p "$dest"
for f in "$src"/*; do
  [[ -f "$f" ]] || continue
  target="$dest/$(basename "$f")"
  if ! cmp -s "$f" "$target"; then
    cp "$f" "$target.tmp.$$"
    mv "$target.tmp.$$" "$target"
    echo "updated $target"
  fi
done
