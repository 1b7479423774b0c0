#!/usr/bin/env bash
# rootfs.sh builds the Debian root filesystems of the local stand-in base
# images (internal/devimages) from Debian's archive. setup.sh sources it
# after lib.sh, with $DIST set, and calls build_rootfs_all.
#
#   bookworm-full  node:22, node:22-bookworm, node:lts (and 24): bookworm
#                  minbase with what the official image's builds rely on
#   bookworm-slim  node:22-slim, node:22-bookworm-slim (and 24): bookworm
#                  minbase, slimmed as Debian's -slim images are
#   trixie-distroless  gcr.io/distroless/nodejs22|24-debian13: trixie
#                  packages unpacked without their maintainer scripts, no
#                  dpkg, no shell, one status file per package in
#                  /var/lib/dpkg/status.d/
#
# Each is a tarball $DIST/rootfs/<name>-<key>.tar, where key hashes what
# defines it (recipe version, suite, architecture, variant, packages), and
# $DIST/rootfs/<name>.json records the key, the file and its sha256;
# devimages reads that record. Tarballs are reproducible: a fixed
# SOURCE_DATE_EPOCH clamps every mtime, entries are sorted by name and
# owners are numeric. The same archive state gives the same bytes; a new
# Debian point release gives a new digest under the same key (the record
# says which digest devimages must find).

ROOTFS_RECIPE=codegenie-rootfs/v2
ROOTFS_ARCH=amd64
ROOTFS_EPOCH=1735689600 # 2025-01-01T00:00:00Z
DEBIAN_MIRROR=${CODEGENIE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_SECURITY=${CODEGENIE_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
ROOTFS_DIR=${CODEGENIE_ROOTFS:-$DIST/rootfs}

# What the official node:<major> (buildpack-deps:bookworm) image has that
# builds use: a compiler toolchain and python3 for node-gyp, git and ssh
# for git dependencies, curl/wget/gnupg/ca-certificates for downloads,
# procps (ps) for scripts that look at processes, and the archivers. Left
# out for size: the -dev libraries, imagemagick, mercurial, subversion.
FULL_PACKAGES=(build-essential python3 git openssh-client curl wget gnupg ca-certificates netbase procps
  xz-utils bzip2 unzip file patch less)
# What Debian's -slim images leave out of every package.
# Quoted: dpkg matches these patterns itself. Unquoted, the shell expanded
# them against this machine's own /usr/share/doc, so the image's dpkg
# excluded only the folders (not their files) of the packages the host
# had, and apt-get install failed on the slim image ("unable to create
# /usr/share/doc/libssl3/changelog.Debian.gz.dpkg-new").
SLIM_EXCLUDES=('/usr/share/doc/*' '/usr/share/man/*' '/usr/share/info/*' '/usr/share/groff/*' '/usr/share/lintian/*'
  '/usr/share/linda/*' '/usr/share/locale/*')
SLIM_INCLUDES=('/usr/share/doc/*/copyright' '/usr/share/locale/locale.alias')
# The mmdebstrap customize hook that deletes them from what is installed.
# shellcheck disable=SC2016 # $1 is mmdebstrap's, expanded in its hook
SLIM_HOOK='cd "$1" && find usr/share/doc -xdev ! -name copyright ! -type d -delete && find usr/share/doc -mindepth 1 -type d -empty -delete && rm -rf usr/share/man/* usr/share/info/* usr/share/groff/* usr/share/lintian/* usr/share/linda/* && find usr/share/locale -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +'
# gcr.io/distroless/nodejs*-debian13: distroless's static, base and cc
# layers (base-files, netbase, tzdata, the CA bundle, glibc, OpenSSL and
# the libraries it links, the C++ runtime).
DISTROLESS_PACKAGES=(base-files netbase tzdata ca-certificates libc6 libssl3t64 libzstd1 zlib1g libgcc-s1 libgomp1
  libstdc++6)

rootfs_key() { # name suite variant packages...
  printf '%s\n' "$ROOTFS_RECIPE" "$ROOTFS_ARCH" "$@" "${SLIM_EXCLUDES[@]}" "${SLIM_INCLUDES[@]}" | sha256sum | cut -c1-16
}

# rootfs_current NAME KEY: true when the record names KEY and its tarball
# has the recorded digest.
rootfs_current() {
  local rec="$ROOTFS_DIR/$1.json" file sum
  [ -s "$rec" ] || return 1
  grep -q "\"key\": \"$2\"" "$rec" || return 1
  file=$(sed -n 's/.*"file": "\([^"]*\)".*/\1/p' "$rec")
  sum=$(sed -n 's/.*"sha256": "\([^"]*\)".*/\1/p' "$rec")
  [ -s "$ROOTFS_DIR/$file" ] || return 1
  [ "$(sha256sum < "$ROOTFS_DIR/$file" | cut -d' ' -f1)" = "$sum" ]
}

# rootfs_record NAME SUITE VARIANT KEY TARBALL PACKAGES...: writes the
# record devimages reads, atomically.
rootfs_record() {
  local name=$1 suite=$2 variant=$3 key=$4 tarball=$5 sum size pkgs
  shift 5
  sum=$(sha256sum < "$tarball" | cut -d' ' -f1)
  size=$(stat -c %s "$tarball")
  pkgs=
  [ $# -eq 0 ] || pkgs=$(printf '"%s", ' "$@")
  cat > "$ROOTFS_DIR/.$name.json" <<EOF
{
  "name": "$name",
  "recipe": "$ROOTFS_RECIPE",
  "suite": "$suite",
  "arch": "$ROOTFS_ARCH",
  "variant": "$variant",
  "packages": [${pkgs%, }],
  "source_date_epoch": $ROOTFS_EPOCH,
  "key": "$key",
  "file": "$(basename "$tarball")",
  "sha256": "$sum",
  "size": $size
}
EOF
  mv "$ROOTFS_DIR/.$name.json" "$ROOTFS_DIR/$name.json"
}

# mmdebstrap_bookworm OUT EXTRA_ARGS...: a bookworm minbase with merged
# /usr (no usrmerge package, as Debian's images), Debian's image apt
# settings, and the security and updates suites. dpkg runs under
# eatmydata (no fsync: the result is a tarball), which mmdebstrap's hook
# removes again; ldconfig then runs once more, so that /etc/ld.so.cache
# does not name libeatmydata and the bytes are those of a build without it.
mmdebstrap_bookworm() {
  local out=$1
  shift
  SOURCE_DATE_EPOCH=$ROOTFS_EPOCH mmdebstrap --quiet --variant=minbase --arch="$ROOTFS_ARCH" --format=tar \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr --hook-dir=/usr/share/mmdebstrap/hooks/eatmydata \
    --customize-hook='printf "#!/bin/sh\n# No services start while an image builds.\nexit 101\n" > "$1/usr/sbin/policy-rc.d"; chmod 755 "$1/usr/sbin/policy-rc.d"' \
    --customize-hook='printf "DPkg::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true\"; };\nAPT::Update::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true\"; };\nDir::Cache::pkgcache \"\";\nDir::Cache::srcpkgcache \"\";\n" > "$1/etc/apt/apt.conf.d/docker-clean"' \
    --customize-hook='printf "Acquire::Languages \"none\";\n" > "$1/etc/apt/apt.conf.d/docker-no-languages"' \
    --customize-hook='rm -f "$1/etc/machine-id" "$1/var/lib/dbus/machine-id"; : > "$1/etc/machine-id"; rm -f "$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old; rm -rf "$1"/var/cache/apt/*.bin "$1"/var/log/apt/* "$1/var/log/dpkg.log" "$1/var/log/alternatives.log" "$1/var/log/bootstrap.log"' \
    "$@" \
    --customize-hook='chroot "$1" /sbin/ldconfig' \
    bookworm "$out" \
    "deb $DEBIAN_MIRROR bookworm main" \
    "deb $DEBIAN_MIRROR bookworm-updates main" \
    "deb $DEBIAN_SECURITY bookworm-security main"
}

# build_bookworm_full OUT: minbase with FULL_PACKAGES, without the docs,
# manuals and translations of what is installed (about 100 MB that no build
# reads, and that every build with vfs storage copied at each step), nor
# gcc's LTO dumper (32 MB, a debugging tool). Unlike -slim, dpkg is not
# told to leave them out of later installs, as in the official image.
build_bookworm_full() {
  local out=$1
  mmdebstrap_bookworm "$out" --include="$(IFS=,; echo "${FULL_PACKAGES[*]}")" \
    --customize-hook="$SLIM_HOOK"' && rm -f usr/bin/x86_64-linux-gnu-lto-dump-*'
}

# build_bookworm_slim OUT: minbase, then what Debian's -slim images do:
# dpkg told to leave docs, manuals and translations out of every later
# install (/etc/dpkg/dpkg.cfg.d/docker), and those of the installed packages
# deleted. (Giving dpkg the excludes during the bootstrap breaks the
# merged-/usr hook's package.)
build_bookworm_slim() {
  local out=$1 cfg p rc=0
  cfg=$(mktemp)
  {
    echo '# Leave docs, manuals and translations out, as Debian -slim images do.'
    for p in "${SLIM_EXCLUDES[@]}"; do echo "path-exclude $p"; done
    for p in "${SLIM_INCLUDES[@]}"; do echo "path-include $p"; done
  } > "$cfg"
  # The patterns must reach dpkg unexpanded.
  grep -qxF 'path-exclude /usr/share/doc/*' "$cfg" || { echo "rootfs: the dpkg excludes were expanded by the shell" >&2; rm -f "$cfg"; return 1; }
  chmod 644 "$cfg"
  mmdebstrap_bookworm "$out" \
    --customize-hook="upload $cfg /etc/dpkg/dpkg.cfg.d/docker" \
    --customize-hook="$SLIM_HOOK" || rc=$?
  rm -f "$cfg"
  return "$rc"
}

# build_trixie_distroless OUT: downloads the packages with a private apt
# setup, unpacks each with dpkg-deb -x (no maintainer script runs), writes
# its control stanza and md5sums to /var/lib/dpkg/status.d/ as distroless
# does, and adds what the maintainer scripts would have made: the CA bundle,
# /etc/passwd and /etc/group, os-release.
build_trixie_distroless() {
  local out=$1 work apt root deb pkg
  work=$(mktemp -d)
  apt=$work/apt root=$work/root
  mkdir -p "$apt/etc/apt/apt.conf.d" "$apt/etc/apt/preferences.d" "$apt/etc/apt/sources.list.d" \
    "$apt/var/lib/apt/lists/partial" "$apt/var/cache/apt/archives/partial" "$work/debs" "$root"
  : > "$apt/status"
  cat > "$apt/etc/apt/sources.list" <<EOF
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $DEBIAN_MIRROR trixie main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $DEBIAN_MIRROR trixie-updates main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $DEBIAN_SECURITY trixie-security main
EOF
  local aptopts=(-q -o "Dir=$apt" -o "Dir::State::status=$apt/status" -o "APT::Architecture=$ROOTFS_ARCH"
    -o "APT::Architectures=$ROOTFS_ARCH" -o Acquire::Languages=none -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
  apt-get "${aptopts[@]}" update >&2
  (cd "$work/debs" && apt-get "${aptopts[@]}" download "${DISTROLESS_PACKAGES[@]}" >&2)
  mkdir -p "$root/var/lib/dpkg/status.d"
  for deb in "$work"/debs/*.deb; do
    pkg=$(dpkg-deb -f "$deb" Package)
    dpkg-deb -x "$deb" "$root"
    dpkg-deb -f "$deb" > "$root/var/lib/dpkg/status.d/$pkg"
    if dpkg-deb --ctrl-tarfile "$deb" | tar -t 2>/dev/null | grep -qx './md5sums'; then
      dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./md5sums > "$root/var/lib/dpkg/status.d/$pkg.md5sums"
    fi
  done
  # Merged /usr, in case base-files does not ship the links.
  for d in bin sbin lib lib64; do
    [ -e "$root/$d" ] || [ -L "$root/$d" ] || ln -s "usr/$d" "$root/$d"
  done
  # What update-ca-certificates would have made.
  mkdir -p "$root/etc/ssl/certs"
  find "$root/usr/share/ca-certificates" -name '*.crt' | LC_ALL=C sort | xargs cat > "$root/etc/ssl/certs/ca-certificates.crt"
  rm -rf "$root/usr/sbin/update-ca-certificates" "$root/etc/ca-certificates" \
    "$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/lintian" "$root/usr/share/locale"
  find "$root/usr/share/doc" -type f ! -name copyright -delete 2>/dev/null || true
  # Users and groups: root, nobody, nonroot (65532), as distroless has.
  cat > "$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
  cat > "$root/etc/group" <<'EOF'
root:x:0:
tty:x:5:
staff:x:50:
nonroot:x:65532:
nogroup:x:65534:
EOF
  printf 'hosts: files dns\n' > "$root/etc/nsswitch.conf"
  rm -f "$root/etc/os-release"
  cat > "$root/etc/os-release" <<'EOF'
PRETTY_NAME="Distroless"
NAME="Debian GNU/Linux"
ID="debian"
VERSION_ID="13"
VERSION="Debian GNU/Linux 13 (trixie)"
VERSION_CODENAME=trixie
HOME_URL="https://github.com/GoogleContainerTools/distroless"
EOF
  mkdir -p "$root/tmp" "$root/root" "$root/home/nonroot"
  chmod 1777 "$root/tmp"
  chmod 700 "$root/root"
  chown 65532:65532 "$root/home/nonroot"
  tar_tree "$root" "$out"
  rm -rf "$work"
}

# tar_tree DIR OUT: a reproducible tarball of DIR.
tar_tree() {
  tar --create --file="$2" --directory="$1" --sort=name --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --mtime="@$ROOTFS_EPOCH" --clamp-mtime --numeric-owner .
}

# build_rootfs NAME SUITE VARIANT BUILDER PACKAGES...: builds the tarball
# unless the record already names its key and digest.
build_rootfs() {
  local name=$1 suite=$2 variant=$3 builder=$4 key tmp
  shift 4
  key=$(rootfs_key "$name" "$suite" "$variant" "$@")
  if rootfs_current "$name" "$key"; then
    return 0
  fi
  tmp="$ROOTFS_DIR/.$name-$key.tar.tmp"
  rm -f "$tmp"
  long "building the $name root filesystem from Debian $suite packages (about a minute)" "$builder" "$tmp"
  mv "$tmp" "$ROOTFS_DIR/$name-$key.tar"
  rootfs_record "$name" "$suite" "$variant" "$key" "$ROOTFS_DIR/$name-$key.tar" "$@"
  # Older tarballs of this name are no longer recorded.
  find "$ROOTFS_DIR" -maxdepth 1 -name "$name-*.tar" ! -name "$name-$key.tar" -delete
}

build_rootfs_all() {
  mkdir -p "$ROOTFS_DIR"
  build_rootfs bookworm-full bookworm minbase-nodocs build_bookworm_full "${FULL_PACKAGES[@]}"
  build_rootfs bookworm-slim bookworm minbase-slim build_bookworm_slim
  build_rootfs trixie-distroless trixie extract build_trixie_distroless "${DISTROLESS_PACKAGES[@]}"
}
