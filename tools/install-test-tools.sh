#!/usr/bin/env bash
# Install the npm test tools into .tools/ (gitignored) at the repository root:
#   @stoplight/prism-cli  the OpenAPI mock server used by the `prism` tests
#   @octokit/openapi      GitHub's official REST OpenAPI description
# Idempotent: does nothing when the pinned versions are already installed.
# Needs node and npm on PATH. Override the pins with PRISM_VERSION / OPENAPI_VERSION.
set -euo pipefail

PRISM_VERSION="${PRISM_VERSION:-5.16.0}"
OPENAPI_VERSION="${OPENAPI_VERSION:-23.0.2}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$repo_root/.tools"

installed_version() {
  local manifest="$prefix/node_modules/$1/package.json"
  [[ -f "$manifest" ]] || return 0
  node -p "require(process.argv[1]).version" "$manifest"
}

if [[ "$(installed_version @stoplight/prism-cli)" == "$PRISM_VERSION" &&
      "$(installed_version @octokit/openapi)" == "$OPENAPI_VERSION" &&
      -x "$prefix/node_modules/.bin/prism" ]]; then
  echo "test tools already installed in $prefix"
  exit 0
fi

mkdir -p "$prefix"
# --ignore-scripts: neither package needs an install script; it skips a telemetry
# postinstall (@scarf/scarf) pulled in by Prism.
npm install --prefix "$prefix" --no-audit --no-fund --ignore-scripts --save-exact \
  "@stoplight/prism-cli@$PRISM_VERSION" "@octokit/openapi@$OPENAPI_VERSION"
echo "installed Prism $PRISM_VERSION and @octokit/openapi $OPENAPI_VERSION in $prefix"
