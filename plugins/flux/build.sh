#!/bin/sh
# Build rush's jobtap priority plugin against the installed flux-core headers.
#
#   plugins/flux/build.sh [OUTPUT.so]      (default: plugins/flux/rush-priority.so)
#
# flux-core is found with pkg-config; a flux-core installed under a prefix of its own
# (the vendored build in /opt/flux-core, or RUSH_FLUX_PREFIX) is added to PKG_CONFIG_PATH.
# Exit status 3: no flux-core development files here (nothing built).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/rush-priority.so}
for prefix in ${RUSH_FLUX_PREFIX:-} /opt/flux-core; do
    if [ -n "$prefix" ] && [ -d "$prefix/lib/pkgconfig" ]; then
        PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    fi
done
export PKG_CONFIG_PATH="${PKG_CONFIG_PATH:-}"
if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists flux-core jansson; then
    echo "build.sh: flux-core or jansson development files not found by pkg-config" \
        "(PKG_CONFIG_PATH=$PKG_CONFIG_PATH); install flux-core (its headers) and libjansson-dev" >&2
    exit 3
fi
tmp="$out.tmp.$$"
# shellcheck disable=SC2046  # pkg-config prints several words on purpose
${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -Wno-unused-parameter -Werror -shared -fPIC \
    -o "$tmp" "$here/rush-priority.c" $(pkg-config --cflags --libs flux-core jansson)
mv "$tmp" "$out"  # atomic: a broker never loads a half-written plugin
echo "$out"
