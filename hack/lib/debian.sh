# Sourced by the hack/ scripts that need Debian packages (they run as root,
# as CI does).

# apt_locked CMD...: CMD holding this project's apt lock. CI installs the
# packages in the background (make prebuild-tools) while its steps run; a
# step that installs at the same time waits here instead of failing on
# dpkg's own lock.
apt_locked() {
  (
    flock 8
    "$@"
  ) 8>/var/lock/podset-operator-apt.lock
}

# apt_install PKG...: installs the packages that are not installed yet
# (a removed package keeps a version in dpkg's records until purged: the
# status is what counts), refreshing the package lists if the first try
# fails.
apt_install() {
  apt_locked apt_install_unlocked "$@"
}

apt_install_unlocked() {
  local missing=() p
  for p in "$@"; do
    [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == "install ok installed" ]] || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "installing Debian's ${missing[*]} (apt-get; needs root)" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; then
    apt-get update >/dev/null
    apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# use_buildah: buildah from Debian, with no daemon: vfs storage, chroot
# isolation.
use_buildah() {
  apt_install buildah
  export STORAGE_DRIVER=${STORAGE_DRIVER:-vfs} BUILDAH_ISOLATION=${BUILDAH_ISOLATION:-chroot}
}

# busybox_rootfs DIR: Debian's static busybox in DIR/bin, one link per
# applet, and a world-writable DIR/tmp, as in a busybox image.
busybox_rootfs() {
  local root=$1 applet
  apt_install busybox-static
  mkdir -p "$root/bin" "$root/tmp"
  cp /bin/busybox "$root/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [[ "$applet" == busybox ]] || ln -s busybox "$root/bin/$applet"
  done
  chmod 1777 "$root/tmp"
}

# save_archive IMAGE FILE: buildah's IMAGE as a docker-archive FILE, under
# its name. Written beside FILE and renamed, so that a failed save leaves no
# file that make would take as up to date.
save_archive() {
  local img=$1 file=$2
  mkdir -p "$(dirname "$file")"
  rm -f "$file" "$file.tmp"
  buildah push --quiet "$img" "docker-archive:$file.tmp:$img" >/dev/null
  mv "$file.tmp" "$file"
}
