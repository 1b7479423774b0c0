package readiness

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// RunStep says whether a final-stage RUN step can move to the builder.
type RunStep struct {
	// Movable is true when the step only produces files the builder can
	// hand over with COPY --from.
	Movable bool
	// Why names what the step does, or what stops it from moving.
	Why string
}

// fileSteps are commands whose whole effect is files under the app, the
// package manager's tree, users and groups, or certificates.
var fileSteps = map[string]string{
	"npm": "installs or builds packages", "yarn": "installs or builds packages", "pnpm": "installs or builds packages",
	"npx": "runs a package's build step", "corepack": "prepares the package manager",
	"adduser": "adds a user", "addgroup": "adds a group", "useradd": "adds a user", "groupadd": "adds a group", "usermod": "changes a user",
	"deluser": "removes a user", "userdel": "removes a user", "delgroup": "removes a group", "groupdel": "removes a group",
	"mkdir": "makes directories", "chown": "sets ownership", "chmod": "sets permissions", "chgrp": "sets ownership",
	"cp": "copies files", "mv": "moves files", "rm": "removes files", "ln": "links files", "touch": "creates files",
	"update-ca-certificates": "installs certificates", "node": "runs a node build step", "tar": "unpacks files",
	"echo": "writes files", "true": "does nothing", "cd": "changes directory", "export": "sets variables for the step",
	"set": "sets shell options for the step", ":": "does nothing",
	// Checks: they read and print (a redirect's target is judged on its
	// own), and fail the step, wherever it runs, when the check fails.
	"[": "checks a condition", "test": "checks a condition", "false": "fails the step", "exit": "ends the step",
	"sha256sum": "checks a checksum", "sha512sum": "checks a checksum", "sha1sum": "checks a checksum", "md5sum": "checks a checksum",
	"cut": "filters text", "printf": "prints text",
}

// stepDoes is what a file step does, said of its subcommand for a
// package manager: npm config set only writes npm's configuration.
func stepDoes(name string, c []string) string {
	if name == "npm" || name == "yarn" || name == "pnpm" {
		for _, a := range c[1:] {
			if strings.HasPrefix(a, "-") {
				continue
			}
			switch a {
			case "config":
				return "sets its configuration"
			case "cache":
				return "manages its cache"
			}
			break
		}
	}
	return fileSteps[name]
}

// sideEffects are commands whose effect is not files the builder can copy.
var sideEffects = map[string]string{
	"service": "starts a service", "systemctl": "manages services", "sysctl": "changes kernel settings",
	"ulimit": "changes limits", "crontab": "installs a cron table", "setcap": "sets file capabilities",
	"modprobe": "loads kernel modules", "mount": "mounts filesystems", "iptables": "changes the firewall",
}

// packageManagers install OS packages; what they install is judged on its
// own (a runtime need is a missing_binary blocker), so the step moves.
var packageManagers = map[string]bool{"apt-get": true, "apt": true, "apk": true, "yum": true, "dnf": true, "microdnf": true, "dpkg": true}

// writes are the file steps whose path arguments are what they change.
// (Directories a step makes, and ownership and modes it sets, travel with
// COPY --from --chown; files it puts into the system directories do not.)
var writes = map[string]bool{"cp": true, "mv": true, "ln": true, "touch": true, "tar": true}

// redirectRE finds the target of an output redirection.
var redirectRE = regexp.MustCompile(`>>?\s*(/[^\s;&|]+)`)

// systemPath reports a path the runtime image owns (its system
// directories), where a builder's file cannot simply be copied over.
// Users and groups (/etc/passwd, /etc/group) are the exception: the recipe
// copies them.
func systemPath(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	switch p {
	case "/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow":
		return false
	}
	for _, d := range []string{"/etc/", "/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/var/lib/", "/var/run/", "/run/", "/proc/", "/sys/", "/boot/"} {
		if strings.HasPrefix(p, d) || p+"/" == d {
			return true
		}
	}
	return false
}

// ClassifyRun decides whether a final-stage RUN step only produces files.
// Every simple command of the step must be one codegenie knows to produce
// files; a command it does not know keeps the step in place, with the
// reason, because what it leaves behind cannot be read statically.
//
// workdir is the stage's working directory: the app's, even when it lies
// under a system directory (/usr/local/app).
func ClassifyRun(in dockerfile.Instruction, workdir string) RunStep {
	inApp := func(p string) bool {
		return workdir != "/" && (p == workdir || strings.HasPrefix(p, strings.TrimSuffix(workdir, "/")+"/"))
	}
	outside := func(p string) bool { return systemPath(p) && !inApp(p) }
	var cmds [][]string
	if in.Form == dockerfile.FormShell {
		for _, m := range redirectRE.FindAllStringSubmatch(strings.Join(in.Args, " "), -1) {
			if outside(m[1]) {
				return RunStep{Why: "it writes " + m[1] + ", outside the app, where the runtime image keeps its own files"}
			}
		}
		a := shellcmd.Analyze(strings.Join(in.Args, " "))
		if a.ParseError != "" {
			return RunStep{Why: "the step is not valid POSIX shell, so what it does is unknown"}
		}
		cmds = a.Commands
	} else {
		cmds = [][]string{in.Args}
	}
	var does []string
	// Files written outside the app, in order: a later rm in the same
	// step undoes a write (ln -s python3 /usr/bin/python for a build, rm
	// /usr/bin/python after it), so only what is left at the step's end
	// stays in the way.
	var pending []outsideWrite
	for _, c := range cmds {
		if len(c) == 0 {
			continue
		}
		name := path.Base(c[0])
		switch {
		case sideEffects[name] != "":
			return RunStep{Why: name + " " + sideEffects[name] + ": that is not a file the builder can hand over"}
		case packageManagers[name]:
			// The step moves to a Debian (glibc) stage, where apk's
			// packages need their Debian names.
			if unknown := UnknownApkPackages(c); len(unknown) > 0 {
				return RunStep{Why: "apk adds " + strings.Join(unknown, ", ") + ", which has no Debian package codegenie knows, and the step would move to a Debian (glibc) stage; write its apt-get install by hand"}
			}
			does = append(does, name+" installs OS packages, each judged on its own")
		case name == "curl" || name == "wget":
			does = append(does, name+" downloads at build time")
		case (name == "bash" || name == "sh") && (len(c) == 1 || c[1] == "-" || c[1] == "-s" || c[1] == "-E"):
			does = append(does, name+" runs a downloaded setup script at build time")
		case name == "install":
			// coreutils install: -d makes directories with an owner and a
			// mode (mkdir, chown, chmod); otherwise it copies files.
			in := shellcmd.ParseInstall(c[1:])
			if in.Dirs != nil {
				does = append(does, "install -d makes directories"+ownedBy(in))
				continue
			}
			if outside(in.Dest) {
				pending = append(pending, outsideWrite{name, in.Dest})
			}
			does = append(does, "install copies files")
		case name == "rm":
			pending = slices.DeleteFunc(pending, func(w outsideWrite) bool { return removedBy(w.path, shellcmd.Removed(c)) })
			does = append(does, name+" "+fileSteps[name])
		case fileSteps[name] != "":
			if written, ok := shellcmd.Written(c); ok && name != "mv" {
				// The destination is what changes: ln's link name, cp's
				// copy; the files they read stay as they were.
				for _, a := range written {
					if outside(a) {
						pending = append(pending, outsideWrite{name, a})
					}
				}
			} else if writes[name] {
				for _, a := range c[1:] {
					if outside(a) {
						pending = append(pending, outsideWrite{name, a})
					}
				}
			}
			does = append(does, name+" "+stepDoes(name, c))
		case name == "<expanded>":
			return RunStep{Why: "a command name comes from a variable, so what it does is unknown"}
		default:
			return RunStep{Why: "codegenie cannot tell what " + c[0] + " leaves behind, so moving it may lose an effect"}
		}
	}
	if len(pending) > 0 {
		return RunStep{Why: pending[0].cmd + " writes " + pending[0].path + ", outside the app, where the runtime image keeps its own files"}
	}
	return RunStep{Movable: true, Why: strings.Join(dedupe(does), "; ")}
}

// outsideWrite is a file a step's command writes outside the app.
type outsideWrite struct{ cmd, path string }

// removedBy reports whether rm's operands remove p: p itself, a directory
// above it, or a glob that matches either.
func removedBy(p string, operands []string) bool {
	for _, o := range operands {
		o = path.Clean(o)
		for q := path.Clean(p); ; q = path.Dir(q) {
			if m, err := path.Match(o, q); q == o || err == nil && m {
				return true
			}
			if q == "/" || q == "." {
				break
			}
		}
	}
	return false
}

// ownedBy describes the owner and mode install -d sets.
func ownedBy(in shellcmd.Install) string {
	var parts []string
	switch {
	case in.Group == "" && in.Owner != "":
		parts = append(parts, "owned by "+in.Owner)
	case in.Group != "":
		parts = append(parts, "owned by "+in.Owner+":"+in.Group)
	}
	if in.Mode != "" {
		parts = append(parts, "mode "+in.Mode)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
