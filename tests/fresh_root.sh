#!/usr/bin/env bash
# The README's commands on a fresh Debian 12: a debootstrap minbase root
# (deploy/base-image.sh's tarball), a clean clone of this repository's HEAD
# inside it with ../shared beside it, and `bash deploy/setup.sh CMD` run in a
# chroot, so every package the command needs must come from setup.sh's own
# lists. A machine where packages were installed by hand hides what they miss.
#
#   bash tests/fresh_root.sh [test|run|build] [setup.sh args...]   (root; default: test)
#
# Prints setup.sh's output, then its wall time and exit status; exits with it.
# KEEP=1 leaves the root in place (its path is printed) for a look inside.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
shared=$(cd "$repo/../shared" 2>/dev/null && pwd) || { echo "fresh_root.sh: no ../shared beside $repo" >&2; exit 2; }
cmd=${1:-test}
shift || true
case $cmd in test | run | build) ;; *) echo "usage: $0 [test|run|build] [setup.sh args...]" >&2; exit 2 ;; esac
((EUID == 0)) || { echo "fresh_root.sh: chroot needs root" >&2; exit 2; }

tarball=/var/cache/cleave-debian12.tar
[[ -s $tarball ]] || bash "$repo/deploy/base-image.sh" "$tarball"

root=$(mktemp -d /var/tmp/cleave-fresh-root.XXXXXX)
mounts=()
cleanup() {
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
  if [[ ${KEEP:-0} == 1 ]]; then echo "fresh_root.sh: the root stays at $root"; else rm -rf "$root"; fi
}
trap cleanup EXIT
echo "fresh_root.sh: unpacking $tarball into $root"
tar --numeric-owner -C "$root" -xf "$tarball"
bind() {  # bind SRC DST [ro]
  mkdir -p "$2"
  mount --rbind "$1" "$2"
  mount --make-rslave "$2"
  mounts+=("$2")
}
# On a machine, / is a mount point, which `ip netns exec` needs (it makes
# / a slave mount in its own namespace): so is the root here.
mount --bind "$root" "$root" && mounts+=("$root")
mount -t proc proc "$root/proc" && mounts+=("$root/proc")
bind /sys "$root/sys"
bind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/tmp" && mounts+=("$root/tmp")
mkdir -p "$root/run" && mount -t tmpfs tmpfs "$root/run" && mounts+=("$root/run")
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# The network's own trust, as any machine on it has it: a site CA that
# intercepts TLS (apt's ca-certificates adds it when it installs), and npm's
# configuration naming the bundle, which npm otherwise ignores.
mkdir -p "$root/usr/local/share/ca-certificates" "$root/root"
cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
[[ -f /etc/npmrc ]] && cp /etc/npmrc "$root/etc/npmrc"
[[ -f $HOME/.npmrc ]] && cp "$HOME/.npmrc" "$root/root/.npmrc"

mkdir -p "$root/work"
git clone -q "$repo" "$root/work/main"
cp -r "$shared" "$root/work/shared"
echo "fresh_root.sh: $(git -C "$root/work/main" log -1 --format='%h %s' | cut -c1-100)"

start=$(date +%s)
status=0
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  TERM=dumb LANG=C.UTF-8 ${NODE_EXTRA_CA_CERTS:+NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS} bash -c 'cd /work/main && bash deploy/setup.sh "$@"' setup "$cmd" "$@" || status=$?
echo "fresh_root.sh: setup.sh $cmd exited $status after $(( $(date +%s) - start )) s"
exit "$status"
