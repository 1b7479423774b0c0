package readiness

import (
	"path"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// An alpine stage that the rewrite moves to a Debian (glibc) image keeps
// its steps, with apk's packages named as Debian names them. A package
// with no known Debian name stops the move: its step must be written by
// hand, and the verdict says so before the recipe would refuse.

// aptNames maps alpine package names to Debian's; "" is a package Debian
// needs no counterpart of (node, npm and yarn come with the node image the
// stage moves to).
var aptNames = map[string]string{
	"build-base": "build-essential", "python3": "python3", "python3-dev": "python3-dev", "py3-pip": "python3-pip", "python": "python3",
	"make": "make", "g++": "g++", "gcc": "gcc", "git": "git", "openssl": "openssl", "ca-certificates": "ca-certificates",
	"curl": "curl", "wget": "wget", "bash": "bash", "libc6-compat": "", "gcompat": "", "libstdc++": "", "musl-dev": "libc6-dev",
	"linux-headers": "linux-libc-dev", "vips-dev": "libvips-dev", "vips": "libvips42", "cairo-dev": "libcairo2-dev",
	"pango-dev": "libpango1.0-dev", "jpeg-dev": "libjpeg-dev", "giflib-dev": "libgif-dev", "pixman-dev": "libpixman-1-dev",
	"openssh": "openssh-client", "openssh-client": "openssh-client", "tini": "tini", "dumb-init": "dumb-init",
	"openssl-dev": "libssl-dev", "zlib-dev": "zlib1g-dev", "sqlite-dev": "libsqlite3-dev", "postgresql-dev": "libpq-dev",
	"tzdata": "tzdata", "nodejs": "", "npm": "", "nodejs-current": "", "yarn": "", "jq": "jq", "unzip": "unzip", "zip": "zip", "autoconf": "autoconf", "automake": "automake",
	"libtool": "libtool", "nasm": "nasm", "pkgconfig": "pkg-config", "pkgconf": "pkg-config", "file": "file",
	// Tools and libraries that services add on alpine, by the Debian
	// package that ships the same files.
	"vim": "vim", "nano": "nano", "less": "less", "procps": "procps", "bind-tools": "dnsutils", "coreutils": "coreutils",
	"findutils": "findutils", "grep": "grep", "sed": "sed", "tar": "tar", "gzip": "gzip", "xz": "xz-utils", "bzip2": "bzip2",
	"zstd": "zstd", "patch": "patch", "rsync": "rsync", "gnupg": "gnupg", "sudo": "sudo", "util-linux": "util-linux",
	"shadow": "passwd", "perl": "perl", "exiftool": "libimage-exiftool-perl", "ffmpeg": "ffmpeg", "imagemagick": "imagemagick",
	"graphicsmagick": "graphicsmagick", "graphviz": "graphviz", "ghostscript": "ghostscript", "poppler-utils": "poppler-utils", "chromium": "chromium",
	"nss": "libnss3", "freetype": "libfreetype6", "harfbuzz": "libharfbuzz0b", "ttf-freefont": "fonts-freefont-ttf",
	"ttf-dejavu": "fonts-dejavu-core", "fontconfig": "fontconfig", "sqlite": "sqlite3", "postgresql-client": "postgresql-client",
	"mysql-client": "default-mysql-client", "netcat-openbsd": "netcat-openbsd", "iputils": "iputils-ping", "git-lfs": "git-lfs",
	"openssh-keygen": "openssh-client", "caddy": "caddy", "libcap-utils": "libcap2-bin", "cmake": "cmake", "ninja": "ninja-build", "libffi-dev": "libffi-dev",
	"libxml2-dev": "libxml2-dev", "libxslt-dev": "libxslt1-dev", "libpng-dev": "libpng-dev", "librsvg-dev": "librsvg2-dev",
	"py3-setuptools": "python3-setuptools", "gettext": "gettext", "libc-dev": "libc6-dev", "libgcc": "",
	// The libraries alpine's nodejs links as shared ones, whose headers an
	// addon build against it needs (hoppscotch's isolated-vm). Those
	// Debian packages exist on bookworm; the node image's node has the
	// rest built in, with its headers, so they need no counterpart.
	"brotli-dev": "libbrotli-dev", "c-ares-dev": "libc-ares-dev", "nghttp2-dev": "libnghttp2-dev", "icu-dev": "libicu-dev",
	"simdjson-dev": "libsimdjson-dev", "zstd-dev": "libzstd-dev", "libuv-dev": "libuv1-dev",
	"ada-dev": "", "simdutf-dev": "", "llhttp-dev": "", "nodejs-dev": "",
}

// DebianPackage is the Debian package for an alpine one ("" when the node
// image needs none); known is false when codegenie knows no counterpart.
func DebianPackage(apk string) (deb string, known bool) {
	deb, known = aptNames[apk]
	return deb, known
}

// UnknownApkPackages lists the packages an "apk add" command line (its
// words, apk first) adds that have no known Debian name. Other apk
// commands add nothing.
func UnknownApkPackages(argv []string) []string {
	if len(argv) < 2 || path.Base(argv[0]) != "apk" {
		return nil
	}
	var unknown []string
	add := false
	for i := 1; i < len(argv); i++ {
		w := argv[i]
		switch {
		case !add && (w == "add" || w == "update" || w == "upgrade" || w == "del"):
			if w != "add" {
				return nil
			}
			add = true
		case w == "--virtual" || w == "-t":
			i++
		case strings.HasPrefix(w, "-"):
		case add:
			name := w
			if j := strings.IndexAny(name, "=~<>"); j > 0 {
				name = name[:j]
			}
			if _, ok := aptNames[name]; !ok {
				unknown = append(unknown, name)
			}
		}
	}
	return unknown
}

// unknownApk finds the first apk add with packages of no known Debian name
// in the stages built on stage root (root included) other than d's final
// stage, whose steps the recipe moves on their own: its line and the
// packages.
func unknownApk(d *dockerfile.File, root int) (int, []string) {
	for j := range d.Stages {
		if j == d.Final || stageRoot(d, j) != root {
			continue
		}
		for _, in := range d.Stages[j].Instructions {
			if in.Command != "run" || in.Form != dockerfile.FormShell {
				continue
			}
			for _, c := range shellcmd.Analyze(strings.Join(in.Args, " ")).Commands {
				if u := UnknownApkPackages(c); len(u) > 0 {
					return in.Line, u
				}
			}
		}
	}
	return 0, nil
}

// stageRoot is the stage that stage i is built from in the end: the first
// of its FROM chain that names an image.
func stageRoot(d *dockerfile.File, i int) int {
	for n := 0; n <= len(d.Stages) && d.Stages[i].BaseStage >= 0; n++ {
		i = d.Stages[i].BaseStage
	}
	return i
}
