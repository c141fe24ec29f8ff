#!/usr/bin/env bash
# ci-chromium.sh installs Debian's chromium, which the catalog's browser
# test (catalog/browser_test.go) drives headless with chromedp against a
# served store; the test fails, naming this script, without it. A second
# run is quick: nothing is reinstalled that is there.
set -euo pipefail

if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-dejavu-core
fi
echo "ci-chromium: $(command -v chromium || command -v chromium-browser)"
