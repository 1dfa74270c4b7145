#!/usr/bin/env bash
# A Debian 12 base image without Docker Hub: `debootstrap --variant=minbase
# bookworm` from this machine's Debian mirror, packed as a root tarball, then
# (with --import) imported as `debian:12`, the FROM of deploy/Dockerfile.
#
# Usage: deploy/base-image.sh [--import] [TARBALL]
#   TARBALL    the root tarball, made once and reused (default
#              /var/cache/cleave-debian12.tar); also a root for a chroot:
#              mkdir r && tar -C r -xf /var/cache/cleave-debian12.tar && chroot r
#   --import   then `docker import` it as debian:12 into the engine at
#              DOCKER_HOST (or the default socket), unless it has one already
# The image's apt sources are the mirror's bookworm and bookworm-updates and
# its security archive. Needs root and debootstrap (apt-get install debootstrap).
# DEBIAN_MIRROR overrides the mirror found in /etc/apt/sources.list*.
set -euo pipefail
import=0
tarball=/var/cache/cleave-debian12.tar
for arg in "$@"; do
  case $arg in
    --import) import=1 ;;
    -*) echo "base-image.sh: unknown flag $arg (usage: $0 [--import] [TARBALL])" >&2; exit 2 ;;
    *) tarball=$arg ;;
  esac
done

# mirror SUITE: the first apt source of this machine serving SUITE (one-line
# sources.list entries and deb822 .sources files).
mirror() {
  python3 - "$1" <<'PY'
import glob, sys
suite = sys.argv[1]
files = glob.glob("/etc/apt/sources.list") + sorted(glob.glob("/etc/apt/sources.list.d/*.list"))
for f in files:
    for line in open(f):
        w = line.split("#", 1)[0].split()
        if w[:1] == ["deb"]:
            w = [x for x in w[1:] if not x.startswith("[")]
            if len(w) >= 2 and w[1] == suite: print(w[0].rstrip("/")); sys.exit()
for f in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for para in open(f).read().split("\n\n"):
        fields = {}
        for line in para.splitlines():
            if ":" in line and not line.startswith(("#", " ")):
                k, v = line.split(":", 1); fields[k.strip().lower()] = v.split()
        if "deb" in fields.get("types", []) and suite in fields.get("suites", []) \
                and fields.get("enabled", ["yes"]) != ["no"] and fields.get("uris"):
            print(fields["uris"][0].rstrip("/")); sys.exit()
PY
}

make_tarball() {
  ((EUID == 0)) || { echo "base-image.sh: debootstrap needs root" >&2; exit 2; }
  command -v debootstrap > /dev/null \
    || { echo "base-image.sh: debootstrap is missing (apt-get install debootstrap)" >&2; exit 2; }
  local main security
  main=${DEBIAN_MIRROR:-$(mirror bookworm)}
  main=${main:-http://deb.debian.org/debian}
  security=$(mirror bookworm-security)
  security=${security:-http://deb.debian.org/debian-security}
  local root
  root=$(mktemp -d "${tarball%/*}/.debian12-root.XXXXXX")
  # debootstrap mounts /proc and /sys in the root while it works.
  trap 'umount -R "$root/proc" "$root/sys" 2>/dev/null; rm -rf "$root" "$tarball.tmp"' EXIT
  echo "base-image.sh: debootstrap --variant=minbase bookworm from $main (a minute or two)"
  debootstrap --variant=minbase bookworm "$root" "$main" > "$root.log" 2>&1 \
    || { echo "base-image.sh: debootstrap failed: $(tail -3 "$root.log")" >&2; rm -f "$root.log"; exit 1; }
  rm -f "$root.log"
  rm -f "$root/etc/apt/sources.list"
  cat > "$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $main
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar --numeric-owner -C "$root" -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
  rm -rf "$root"
  trap - EXIT
  echo "base-image.sh: $tarball ($(du -h "$tarball" | cut -f1))"
}

mkdir -p "$(dirname "$tarball")"
if [[ -s $tarball ]]; then
  echo "base-image.sh: reusing $tarball"
else
  make_tarball
fi
if ((import)); then
  if docker image inspect debian:12 > /dev/null 2>&1; then
    echo "base-image.sh: the engine has debian:12 already"
  else
    docker import --message "debootstrap --variant=minbase bookworm" "$tarball" debian:12 > /dev/null
    echo "base-image.sh: imported $tarball as debian:12"
  fi
fi
