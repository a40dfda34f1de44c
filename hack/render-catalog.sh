#!/usr/bin/env bash
# Renders the file-based catalog (FBC) of this operator: one olm.package, one
# olm.channel per channel, and the olm.bundle rendered by opm from the bundle
# directory. The bundle is rendered from bundle/ rather than from its image so
# that no registry or container engine is needed; its image reference is
# filled in with BUNDLE_IMG, which is what OLM pulls to unpack it.
#
# usage: hack/render-catalog.sh OPM BUNDLE_DIR CATALOG_DIR PACKAGE BUNDLE_IMG CHANNELS DEFAULT_CHANNEL ICON
set -euo pipefail

opm=$1 bundle=$2 catalog=$3 package=$4 image=$5 channels=$6 default_channel=$7 icon=$8

rendered=$("$opm" render "$bundle" --output=yaml --alpha-image-ref-template="$image")
# The bundle's name is its CSV's name, the first top-level name of the output.
name=$(printf '%s\n' "$rendered" | sed -n 's/^name: //p' | head -n 1)
if [ -z "$name" ]; then
  echo "opm render $bundle produced no bundle" >&2
  exit 1
fi

rm -rf "$catalog"
mkdir -p "$catalog/$package"
out=$catalog/$package/catalog.yaml
{
  "$opm" init "$package" --default-channel="$default_channel" --icon="$icon" --output=yaml
  for channel in ${channels//,/ }; do
    printf -- '---\nschema: olm.channel\npackage: %s\nname: %s\nentries:\n- name: %s\n' "$package" "$channel" "$name"
  done
  printf -- '---\n'
  printf '%s\n' "$rendered" | sed '1{/^---$/d}'
} >"$out"
echo "rendered $out ($name in channels $channels, default $default_channel)"
