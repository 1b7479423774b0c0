package recipe

import (
	"regexp"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// An alpine stage that moves to a Debian (glibc) image keeps its steps, but
// apk and busybox's adduser and addgroup become their Debian forms.

// apkToApt rewrites stage i's RUN steps for Debian.
func (r *rewriter) apkToApt(i int) error {
	for _, in := range r.d.Stages[i].Instructions {
		if in.Command != "run" || in.Form != dockerfile.FormShell {
			continue
		}
		src := r.verbatim(in)
		if !apkRE.MatchString(src) && !busyboxUserRE.MatchString(src) {
			continue
		}
		text, unknown := debianRun(src)
		if len(unknown) > 0 {
			return r.refuse(readiness.RuleGlibcBuilder, "the step installs alpine packages with no known Debian name: "+strings.Join(unknown, ", "),
				"the stage moves to a glibc (Debian) image; write its apt-get install by hand", in.Line)
		}
		if strings.TrimSpace(text) == "RUN true" {
			text = "" // it installed only what the node image has
		}
		r.replace(in, text)
		r.res.Changes = append(r.res.Changes, Change{Rule: readiness.RuleGlibcBuilder, Line: in.Line, What: "apk and busybox user steps become apt-get and Debian adduser/addgroup"})
	}
	return nil
}

var (
	apkRE         = regexp.MustCompile(`\bapk\s+((?:-[-\w]+(?:\s+[.\w-]+)?\s+)*)(add|update|upgrade|del)\b([^&;|]*)`)
	busyboxUserRE = regexp.MustCompile(`\b(adduser|addgroup)\s+([^&;|]*)`)
)

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
}

// debianRun rewrites one RUN instruction's text; unknown lists packages it
// cannot name on Debian.
func debianRun(src string) (string, []string) {
	var unknown []string
	src = strings.ReplaceAll(src, "\\\n", " ")
	out := apkRE.ReplaceAllStringFunc(src, func(m string) string {
		sm := apkRE.FindStringSubmatch(m)
		switch sm[2] {
		case "update":
			return "apt-get update" + tailSpace(sm[3])
		case "upgrade", "del":
			return "true" + tailSpace(sm[3])
		}
		var pkgs []string
		fields := strings.Fields(sm[3])
		for i := 0; i < len(fields); i++ {
			f := fields[i]
			if f == "--virtual" || f == "-t" {
				i++
				continue
			}
			if strings.HasPrefix(f, "-") {
				continue
			}
			name := f
			if j := strings.IndexAny(name, "=~<>"); j > 0 {
				name = name[:j]
			}
			deb, ok := aptNames[name]
			switch {
			case !ok:
				unknown = append(unknown, name)
			case deb != "":
				pkgs = append(pkgs, deb)
			}
		}
		if len(pkgs) == 0 {
			return "true" + tailSpace(sm[3])
		}
		return "apt-get update && apt-get install -y --no-install-recommends " + strings.Join(pkgs, " ") + " && rm -rf /var/lib/apt/lists/*" + tailSpace(sm[3])
	})
	out = busyboxUserRE.ReplaceAllStringFunc(out, func(m string) string {
		sm := busyboxUserRE.FindStringSubmatch(m)
		return sm[1] + " " + debianUserFlags(sm[1], sm[2])
	})
	return out, unknown
}

// tailSpace keeps the whitespace that ended a match.
func tailSpace(s string) string {
	t := strings.TrimRight(s, " \t\n")
	return s[len(t):]
}

// debianUserFlags turns busybox adduser/addgroup flags into Debian's.
func debianUserFlags(cmd, args string) string {
	fields := strings.Fields(args)
	var out []string
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		val := func() string {
			if i+1 < len(fields) {
				i++
				return fields[i]
			}
			return ""
		}
		switch f {
		case "-S":
			out = append(out, "--system")
		case "-D":
			out = append(out, "--disabled-password")
		case "-H":
			out = append(out, "--no-create-home")
		case "-G":
			out = append(out, "--ingroup", val())
		case "-u":
			out = append(out, "--uid", val())
		case "-g":
			if cmd == "addgroup" {
				out = append(out, "--gid", val())
			} else {
				out = append(out, "--gecos", val())
			}
		case "-h":
			out = append(out, "--home", val())
		case "-s":
			out = append(out, "--shell", val())
		default:
			out = append(out, f)
		}
	}
	return strings.Join(out, " ") + tailSpace(args)
}
