#!/usr/bin/env bash
# Install the npm-based test tools (Prism mock server and GitHub's OpenAPI
# description) into .tools/ at the repository root. Safe to run repeatedly:
# it does nothing when the pinned versions are already installed.
set -euo pipefail

PRISM_VERSION="${PRISM_VERSION:-5.14.2}"
OPENAPI_VERSION="${OPENAPI_VERSION:-latest}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$repo_root/.tools"
