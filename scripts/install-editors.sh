#!/usr/bin/env bash
# Installs the editors the end-to-end tests drive from the distribution's packages:
# Neovim (its built-in LSP client) and Emacs with eglot.  Idempotent: installs only
# what is missing (`nvim` on PATH; `emacs` that can load eglot).  Needs root (or
# sudo) and a Debian/Ubuntu package registry.
set -euo pipefail
wanted=()
if ! command -v nvim >/dev/null 2>&1; then
  wanted+=(neovim)
fi
if ! command -v emacs >/dev/null 2>&1 ||
   ! emacs --batch --eval "(progn (package-initialize) (require 'eglot))" >/dev/null 2>&1; then
  wanted+=(emacs-nox elpa-eglot)
fi
if [ "${#wanted[@]}" -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
fi
echo "install-editors: installing ${wanted[*]}…" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq --no-install-recommends "${wanted[@]}" >&2
