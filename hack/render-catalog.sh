#!/usr/bin/env bash
# Renders the file-based catalog (FBC) of this operator: one olm.package, one
# olm.channel per channel, the olm.bundle of every earlier release, taken from
# the catalog that release shipped (PREVIOUS_CATALOG, a catalog.yaml), and
# the olm.bundle rendered by opm from the bundle directory. The bundle is
# rendered from bundle/ rather than from its image so that no registry or
# container engine is needed; its image reference is filled in with
# BUNDLE_IMG, which is what OLM pulls to unpack it.
#
# The upgrade edge: in each channel, the new bundle's entry replaces the head
# of that channel in the previous catalog, and skips every version in its
# CSV's olm.skipRange annotation, so that a Subscription on an earlier
# release upgrades to it.
#
# usage: hack/render-catalog.sh OPM BUNDLE_DIR CATALOG_DIR PACKAGE BUNDLE_IMG CHANNELS DEFAULT_CHANNEL ICON [PREVIOUS_CATALOG]
set -euo pipefail

opm=$1 bundle=$2 catalog=$3 package=$4 image=$5 channels=$6 default_channel=$7 icon=$8 previous=${9:-}

rendered=$("$opm" render "$bundle" --output=yaml --alpha-image-ref-template="$image")
# The bundle's name is its CSV's name, the first top-level name of the output.
name=$(printf '%s\n' "$rendered" | sed -n 's/^name: //p' | head -n 1)
if [ -z "$name" ]; then
  echo "opm render $bundle produced no bundle" >&2
  exit 1
fi
skip_range=$(sed -n "s/^    olm.skipRange: '\(.*\)'$/\1/p" "$bundle"/manifests/*.clusterserviceversion.yaml)

# docs SCHEMA FILE: the YAML documents of FILE whose top-level schema is
# SCHEMA, each starting with ---.
docs() {
  awk -v schema="$1" '
    function flush() { if (doc != "" && doc ~ ("(^|\n)schema: " schema "(\n|$)")) printf "---\n%s", doc; doc = "" }
    /^---$/ { flush(); next }
    { doc = doc $0 "\n" }
    END { flush() }' "$2"
}
# entries CHANNEL FILE: the entries of CHANNEL in FILE, as they are written
# there (their replaces, skips and skipRange lines included).
entries() {
  docs olm.channel "$2" | awk -v ch="$1" '
    function flush() { if (isch) printf "%s", ent; ent = ""; isch = 0; inent = 0 }
    /^---$/ { flush(); next }
    $0 == "name: " ch { isch = 1 }
    /^entries:/ { inent = 1; next }
    inent && /^[- ] / { ent = ent $0 "\n"; next }
    { inent = 0 }
    END { flush() }'
}

if [ -n "$previous" ] && grep -q "^name: $name\$" "$previous"; then
  echo "$previous already has $name: bump VERSION, or render without it" >&2
  exit 1
fi

rm -rf "$catalog"
mkdir -p "$catalog/$package"
out=$catalog/$package/catalog.yaml
{
  "$opm" init "$package" --default-channel="$default_channel" --icon="$icon" --output=yaml
  for channel in ${channels//,/ }; do
    printf -- '---\nschema: olm.channel\npackage: %s\nname: %s\nentries:\n' "$package" "$channel"
    head=
    if [ -n "$previous" ]; then
      prev=$(entries "$channel" "$previous")
      [ -z "$prev" ] || printf '%s\n' "$prev"
      # The channel's head: the last entry, which OLM's releases append.
      head=$(printf '%s\n' "$prev" | sed -n 's/^- name: //p' | tail -n 1)
    fi
    printf -- '- name: %s\n' "$name"
    [ -z "$head" ] || printf '  replaces: %s\n' "$head"
    [ -z "$skip_range" ] || printf "  skipRange: '%s'\n" "$skip_range"
  done
  [ -z "$previous" ] || docs olm.bundle "$previous"
  printf -- '---\n'
  printf '%s\n' "$rendered" | sed '1{/^---$/d}'
} >"$out"
echo "rendered $out ($name in channels $channels, default $default_channel${previous:+, with the bundles of $previous})"
