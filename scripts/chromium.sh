#!/usr/bin/env bash
# Make sure Debian's Chromium is installed (JavaScript-rendered shops and the admin's browser
# tests use /usr/bin/chromium; Playwright's own browser download does not work everywhere).
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  exit 0
fi
echo "installing Debian's chromium (apt-get)"
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
/usr/bin/chromium --version
