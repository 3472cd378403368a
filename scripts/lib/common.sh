# Shared by the scripts: install missing Debian packages, configure and build a preset.
# Sourced, not run.

CORRAL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# Build and run-time needs of Corral, its tests and benchmarks (Debian 12 names).
CORRAL_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libboost-dev libboost-system-dev libhiredis-dev libspdlog-dev libyaml-cpp-dev prometheus-cpp-dev
  catch2 libssl-dev openssl redis-server redis-tools python3 python3-redis prometheus curl
  python3-pytest python3-yaml
)

# install_packages [extra...]: apt-get installs whatever of the list is missing.
install_packages() {
  local missing=()
  local package
  for package in "${CORRAL_PACKAGES[@]}" "$@"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

# build_preset PRESET [cmake -D options...]: configure (once) and build into build/PRESET's dir.
build_preset() {
  local preset=$1
  shift
  (cd "$CORRAL_ROOT" && cmake --preset "$preset" "$@" >/dev/null && cmake --build --preset "$preset")
}

# corral_release_bin: the path of $CORRAL_BIN when set, else of a release build of corral made
# now (its progress on stderr).
corral_release_bin() {
  if [ -n "${CORRAL_BIN:-}" ]; then
    realpath "$CORRAL_BIN"
    return
  fi
  echo "== release build: corral" >&2
  (cd "$CORRAL_ROOT" && cmake --preset release >/dev/null && cmake --build --preset release --target corral) >&2
  echo "$CORRAL_ROOT/build/release/src/corral"
}
