#!/usr/bin/env bash
# Puts promtool, vmalert, victoria-metrics and amtool in .tools/bin.
# Uses binaries already on PATH when present; otherwise downloads Debian's packages
# (prometheus, victoria-metrics, prometheus-alertmanager) with `apt-get download` and
# extracts them with `dpkg -x`. Nothing is installed system-wide and no server is started.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/.tools/bin"
mkdir -p "$bin"

want=(promtool:prometheus prometheus:prometheus vmalert:victoria-metrics victoria-metrics:victoria-metrics amtool:prometheus-alertmanager)
missing_pkgs=()
for pair in "${want[@]}"; do
  tool="${pair%%:*}"; pkg="${pair#*:}"
  [ -x "$bin/$tool" ] && continue
  if found="$(command -v "$tool" 2>/dev/null)" && [ "$found" != "$bin/$tool" ]; then
    ln -sf "$found" "$bin/$tool"; continue
  fi
  [[ " ${missing_pkgs[*]-} " == *" $pkg "* ]] || missing_pkgs+=("$pkg")
done
[ ${#missing_pkgs[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
  cat >&2 <<MSG
error: promtool/vmalert not found and this is not a Debian-like system.
Install them and put them on PATH, then re-run:
  - promtool (Prometheus 2.42+): https://prometheus.io/download/  (brew install prometheus)
  - vmalert, victoria-metrics: https://github.com/VictoriaMetrics/VictoriaMetrics/releases
  - amtool (Alertmanager): https://prometheus.io/download/
MSG
  exit 1
fi
work="$root/.tools/deb"
mkdir -p "$work"
( cd "$work" && apt-get download "${missing_pkgs[@]}" >/dev/null 2>&1 ) || {
  echo "error: 'apt-get download ${missing_pkgs[*]}' failed (no package index? run 'apt-get update' as root, or install promtool and vmalert on PATH)" >&2
  exit 1
}
for deb in "$work"/*.deb; do dpkg -x "$deb" "$work/root"; done
for pair in "${want[@]}"; do
  tool="${pair%%:*}"
  [ -x "$bin/$tool" ] && continue
  [ -x "$work/root/usr/bin/$tool" ] && ln -sf "$work/root/usr/bin/$tool" "$bin/$tool"
  [ -x "$work/root/usr/bin/prometheus-alertmanager" ] && [ ! -e "$bin/alertmanager" ] && ln -sf "$work/root/usr/bin/prometheus-alertmanager" "$bin/alertmanager"
done
rm -f "$work"/*.deb
"$bin/promtool" --version 2>&1 | head -1
