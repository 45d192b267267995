#!/usr/bin/env bash
# Vendor uPlot (the admin's chart library) from the npm registry into recordhound/admin/static/vendor/.
# Usage: bash scripts/update-uplot.sh [VERSION]   (default: the newest 1.6.x). Needs npm; no CDN at run time.
set -euo pipefail
version="${1:-1.6}"
target="$(cd "$(dirname "$0")/.." && pwd)/recordhound/admin/static/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "uplot@${version}" >/dev/null && tar xzf uplot-*.tgz)
cp "$work/package/dist/uPlot.iife.min.js" "$work/package/dist/uPlot.min.css" "$target/"
cp "$work/package/LICENSE" "$target/uPlot.LICENSE"
got="$(node -p "require('$work/package/package.json').version" 2>/dev/null || echo "$version")"
echo "uPlot ${got} (MIT), from the npm registry: dist/uPlot.iife.min.js and dist/uPlot.min.css; update with scripts/update-uplot.sh" > "$target/VERSION"
echo "vendored uPlot ${got} into ${target}"
