#!/usr/bin/env bash
# Puts the engines the tests run into .tools/bin, all real binaries from Debian's packages, nothing
# installed system-wide and no server started:
#
#   promtool, prometheus                    Prometheus 3.5 (unstable: packages promtool, prometheus)
#   victoria-metrics, vmalert, vmalert-tool VictoriaMetrics 1.145 (unstable; trixie's 1.112 if unstable lacks it)
#   promtool-2.42, prometheus-2.42          Debian stable's prometheus 2.42, the oldest engine the rules promise
#   amtool, alertmanager                    Debian stable's prometheus-alertmanager
#
# Stable packages come through the machine's own apt configuration (`apt-get download`). Packages of
# other suites come through a private apt directory per suite (.tools/apt/<suite>/): a sources file
# with the machine's own Debian URI and Signed-By keyring (signatures checked as usual), its own lists
# and cache, the machine's dpkg status read only, no lock taken. Each package is unpacked with
# `dpkg -x` into .tools/pkg/<package>_<version>/ and linked from .tools/bin (relative links);
# .tools/versions records which package and version each link comes from.
#
# A second run with every link in place only prints the versions.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/.tools"
bin="$tools/bin" pkgs="$tools/pkg" aptdir="$tools/apt" debs="$tools/deb" versions="$tools/versions"

PROMETHEUS3_PREFERRED="3.5.3+ds1-6"   # tested 2026-11-24; unstable's current 3.x is accepted after it

# tool:package:path inside the package
LINKS=(
  promtool:promtool:usr/bin/promtool
  prometheus:prometheus3:usr/bin/prometheus
  victoria-metrics:victoria-metrics:usr/bin/victoria-metrics
  vmalert:victoria-metrics:usr/bin/vmalert
  vmalert-tool:victoria-metrics:usr/bin/vmalert-tool
  promtool-2.42:prometheus2:usr/bin/promtool
  prometheus-2.42:prometheus2:usr/bin/prometheus
  amtool:prometheus-alertmanager:usr/bin/amtool
  alertmanager:prometheus-alertmanager:usr/bin/prometheus-alertmanager
)

# A link is in place when it resolves to an executable unpacked under .tools/pkg (not /tmp, not PATH).
in_place() {
  local target real_pkgs
  target="$(readlink -f "$bin/$1" 2>/dev/null)" || return 1
  real_pkgs="$(readlink -f "$pkgs")"   # .tools may itself be a link (a git worktree sharing a checkout's tools)
  [[ "$target" == "$real_pkgs/"* && -x "$target" ]]
}

show_versions() {
  echo "engines in .tools/bin (Debian packages):"
  awk '{ printf "  %-17s %s %s (%s)\n", $1, $2, $3, $4 }' "$versions"
  echo "primary engine: $("$bin/promtool" --version 2>&1 | head -1)"
}

missing=()
for entry in "${LINKS[@]}"; do
  tool="${entry%%:*}"
  in_place "$tool" && awk -v t="$tool" '$1 == t { f = 1 } END { exit !f }' "$versions" 2>/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -eq 0 ]; then
  show_versions
  exit 0
fi

if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
  absent=()
  for entry in "${LINKS[@]}"; do
    tool="${entry%%:*}"
    var="RULESGEN_$(echo "$tool" | tr 'a-z' 'A-Z' | tr -c 'A-Z0-9\n' '_')"
    [ -n "${!var:-}" ] || command -v "$tool" >/dev/null || absent+=("$tool")
  done
  if [ ${#absent[@]} -eq 0 ]; then
    echo "not a Debian-like system: using the engines on PATH"
    exit 0
  fi
  cat >&2 <<MSG
error: ${absent[*]} not found and this is not a Debian-like system (no apt-get/dpkg).
Install them and put them on PATH, then re-run:
  - promtool, prometheus (Prometheus 3.5 LTS): https://prometheus.io/download/  (brew install prometheus)
  - promtool-2.42, prometheus-2.42: the 2.42.0 release of the same, renamed (or point RULESGEN_PROMTOOL_2_42
    and RULESGEN_PROMETHEUS_2_42 at them)
  - victoria-metrics, vmalert, vmalert-tool (1.145): https://github.com/VictoriaMetrics/VictoriaMetrics/releases
  - amtool, alertmanager (Alertmanager): https://prometheus.io/download/
MSG
  exit 1
fi

mkdir -p "$bin" "$pkgs" "$aptdir" "$debs"
if command -v flock >/dev/null; then  # two `make test` at once: the second waits for the first
  exec 9>"$tools/.lock"
  flock 9
fi
log="$tools/apt.log"
: >"$log"
fail() {
  echo "error: $*" >&2
  [ -s "$log" ] && { echo "--- apt output:" >&2; tail -30 "$log" >&2; }
  exit 1
}

# ------------------------------------------------------------------------------------------------
# private apt directories
# ------------------------------------------------------------------------------------------------
eval "$(apt-config shell SOURCELIST Dir::Etc::sourcelist/f SOURCEPARTS Dir::Etc::sourceparts/d \
                        TRUSTED Dir::Etc::trusted/f TRUSTEDPARTS Dir::Etc::trustedparts/d)"

# The machine's Debian source as a template with @SUITE@ for the suite: the first enabled deb source
# whose URI names debian (not -security) and that has a plain suite (bookworm, stable ...). Its URIs,
# Signed-By and Architectures are kept; Trusted / allow-insecure options never are.
template() {
  local parts=()
  shopt -s nullglob
  parts=("${SOURCEPARTS%/}"/*.sources)
  if [ ${#parts[@]} -gt 0 ]; then
    awk 'BEGIN { RS = ""; FS = "\n" }
    {
      split("", val); cur = ""
      for (i = 1; i <= NF; i++) {
        line = $i
        if (line ~ /^#/) continue
        if (line ~ /^[ \t]/) { if (cur != "") val[cur] = val[cur] "\n" line; continue }
        p = index(line, ":"); if (!p) { cur = ""; continue }
        cur = tolower(substr(line, 1, p - 1)); v = substr(line, p + 1)
        sub(/^[ \t]+/, "", v); sub(/[ \t]+$/, "", v); val[cur] = v
      }
      if (tolower(val["enabled"]) == "no") next
      if ((" " val["types"] " ") !~ /[ \t]deb[ \t]/) next
      if (val["uris"] !~ /debian/ || val["uris"] ~ /security/) next
      plain = 0; n = split(val["suites"], s, /[ \t]+/)
      for (j = 1; j <= n; j++) if (s[j] ~ /^[a-z]+$/) plain = 1
      if (!plain) next
      print "Types: deb"; print "URIs: " val["uris"]; print "Suites: @SUITE@"; print "Components: main"
      if (val["signed-by"] != "") print "Signed-By: " val["signed-by"]
      if (val["architectures"] != "") print "Architectures: " val["architectures"]
      exit
    }' "${parts[@]}" >"$aptdir/template.sources"
    if [ -s "$aptdir/template.sources" ]; then echo sources; return; fi
  fi
  parts=()
  [ -f "$SOURCELIST" ] && parts+=("$SOURCELIST")
  parts+=("${SOURCEPARTS%/}"/*.list)
  if [ ${#parts[@]} -gt 0 ]; then
    awk '$1 == "deb" {
      opts = ""; i = 2
      if ($2 ~ /^\[/) {
        for (; i <= NF; i++) {
          t = $i; gsub(/[\[\]]/, "", t)
          if (t ~ /^(signed-by|arch)=/) opts = opts " " t
          if ($i ~ /\]$/) { i++; break }
        }
      }
      uri = $i; suite = $(i + 1)
      if (uri !~ /debian/ || uri ~ /security/ || suite !~ /^[a-z]+$/) next
      sub(/^ /, "", opts)
      print "deb " (opts != "" ? "[" opts "] " : "") uri " @SUITE@ main"
      exit
    }' "${parts[@]}" >"$aptdir/template.list"
    if [ -s "$aptdir/template.list" ]; then echo list; return; fi
  fi
  # Nothing usable found: Debian's own address, with Debian's keyring when the machine has it.
  {
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: @SUITE@\nComponents: main\n'
    [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] && echo "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
  } >"$aptdir/template.sources"
  echo "note: no Debian source found in the apt configuration; using http://deb.debian.org/debian" >&2
  echo sources
}

priv_opts() {  # apt options for the private directory of suite $1
  local d="$aptdir/$1"
  echo "-o Dir::Etc=$d/etc -o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts=$d/etc/sources.list.d" \
       "-o Dir::Etc::trusted=$TRUSTED -o Dir::Etc::trustedparts=$TRUSTEDPARTS" \
       "-o Dir::State::Lists=$d/lists -o Dir::Cache=$d/cache -o Dir::State::status=/var/lib/dpkg/status" \
       "-o Debug::NoLocking=1 -o Acquire::Languages=none"
}

declare -A updated=()
# The private index of suite $1: made on first use, refreshed when older than a day.
prepare_suite() {
  local suite="$1" d="$aptdir/$1" kind
  [ -n "${updated[$suite]:-}" ] && return 0
  kind="$(template)"
  mkdir -p "$d/etc/sources.list.d" "$d/etc/apt.conf.d" "$d/etc/preferences.d" "$d/lists/partial" "$d/cache/archives/partial"
  rm -f "$d/etc/sources.list.d/"*
  sed "s/@SUITE@/$suite/" "$aptdir/template.$kind" >"$d/etc/sources.list.d/$suite.$kind"
  if [ -z "$(find "$d/lists" -maxdepth 1 -name '*_Packages*' -mmin -1440 2>/dev/null)" ]; then
    echo "apt-get update (suite $suite, private index in .tools/apt/$suite) ..."
    # shellcheck disable=SC2046
    apt-get $(priv_opts "$suite") -q update >>"$log" 2>&1 || fail "apt-get update of suite $suite failed"
  fi
  updated[$suite]=1
}

# The machine's own index: refreshed once when it has no candidate for prometheus (no index yet).
machine_index() {
  [ -n "${updated[machine]:-}" ] && return 0
  local policy
  policy="$(apt-cache policy prometheus 2>/dev/null || true)"
  if [[ "$policy" != *"Candidate: "[0-9]* ]]; then
    if [ "$(id -u)" -ne 0 ]; then
      fail "the machine's package index has no prometheus: run 'apt-get update' as root, then 'make tools'"
    fi
    echo "apt-get update (the machine's package index) ..."
    apt-get -q update >>"$log" 2>&1 || fail "apt-get update failed"
  fi
  updated[machine]=1
}

# apt-get / apt-cache for a source: "machine" or a suite name
apt_for() {
  local where="$1" cmd="$2"; shift 2
  if [ "$where" = machine ]; then "$cmd" "$@"; else
    # shellcheck disable=SC2046
    "$cmd" $(priv_opts "$where") "$@"
  fi
}

# pick <package> <version regex> <preferred version or -> <source>: the version to download, or nothing
pick() {
  local pkg="$1" want="$2" prefer="$3" where="$4" cand
  if [ "$prefer" != - ] && { apt_for "$where" apt-cache madison "$pkg" 2>/dev/null || true; } \
      | awk -F'|' -v v="$prefer" '{ gsub(/ /, "", $2) } $2 == v { f = 1 } END { exit !f }'; then
    echo "$prefer"; return
  fi
  cand="$(apt_for "$where" apt-cache policy "$pkg" 2>/dev/null | awk '$1 == "Candidate:" { print $2 }')"
  if [[ -n "$cand" && "$cand" != "(none)" && "$cand" =~ $want ]]; then echo "$cand"; fi
}

# fetch <key> <package> <version regex> <preferred version or -> <source>...: downloads the first
# source's fitting version, unpacks it, sets dir[key], ver[key], from[key].
declare -A dir=() ver=() from=() name=()
fetch() {
  local key="$1" pkg="$2" want="$3" prefer="$4" where version deb; shift 4
  for where in "$@"; do
    if [ "$where" = machine ]; then machine_index; else prepare_suite "$where"; fi
    version="$(pick "$pkg" "$want" "$prefer" "$where")"
    [ -n "$version" ] || { echo "note: $pkg: no version matching $want in $where" >&2; continue; }
    dir[$key]="$pkgs/${pkg}_$version" ver[$key]="$version" name[$key]="$pkg"
    from[$key]="$where"
    [ "$where" = machine ] && from[$key]="$(. /etc/os-release 2>/dev/null; echo "${VERSION_CODENAME:-stable}")"
    if [ ! -d "${dir[$key]}/usr/bin" ]; then
      echo "apt-get download $pkg=$version ($where) ..."
      rm -f "$debs"/*.deb
      (cd "$debs" && apt_for "$where" apt-get download "$pkg=$version") >>"$log" 2>&1 \
        || fail "apt-get download $pkg=$version ($where) failed"
      deb="$(ls "$debs"/*.deb)"
      rm -rf "${dir[$key]}.tmp"
      dpkg -x "$deb" "${dir[$key]}.tmp"
      mv "${dir[$key]}.tmp" "${dir[$key]}"
      rm -f "$deb"
    fi
    return 0
  done
  fail "$pkg: no version matching $want in: $*"
}

need() {  # is any link of package key $1 missing?
  local entry
  for entry in "${LINKS[@]}"; do
    IFS=: read -r tool key _ <<<"$entry"
    [ "$key" = "$1" ] && [[ " ${missing[*]} " == *" $tool "* ]] && return 0
  done
  return 1
}

need promtool && fetch promtool promtool '^3\.' "$PROMETHEUS3_PREFERRED" sid
need prometheus3 && fetch prometheus3 prometheus '^3\.' "$PROMETHEUS3_PREFERRED" sid
need victoria-metrics && fetch victoria-metrics victoria-metrics '^1\.1[0-9][0-9]\.' - sid trixie
need prometheus2 && fetch prometheus2 prometheus '^2\.42\.' - machine bookworm
need prometheus-alertmanager && fetch prometheus-alertmanager prometheus-alertmanager '.' - machine bookworm

touch "$versions"
for entry in "${LINKS[@]}"; do
  IFS=: read -r tool key path <<<"$entry"
  [ -n "${dir[$key]:-}" ] || continue
  [ -x "${dir[$key]}/$path" ] || fail "${name[$key]} ${ver[$key]} has no $path"
  ln -sfn "../pkg/$(basename "${dir[$key]}")/$path" "$bin/$tool"
  { awk -v t="$tool" '$1 != t' "$versions"; echo "$tool ${name[$key]} ${ver[$key]} ${from[$key]}"; } >"$versions.new"
  mv "$versions.new" "$versions"
done
sort -o "$versions" "$versions"
for entry in "${LINKS[@]}"; do
  tool="${entry%%:*}"
  in_place "$tool" || fail "$tool is not in place in .tools/bin"
done
rmdir "$debs" 2>/dev/null || true
# unpacked versions no link points at any more (an older unstable promtool ...)
for d in "$pkgs"/*/; do
  d="${d%/}"
  grep -qF "/$(basename "$d")/" <(for t in "$bin"/*; do readlink "$t"; done) || rm -rf "$d"
done
show_versions
