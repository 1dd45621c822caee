#!/usr/bin/env bash
# Debian's Chromium for the site's browser test, installed when missing (root and apt-get).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing Debian's chromium for the browser test..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  echo "The site's browser test needs Debian's Chromium at /usr/bin/chromium:" \
       "run 'sudo apt-get install chromium' and try again." >&2
  exit 1
fi
