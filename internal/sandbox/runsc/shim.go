package runsc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// ShimName is the file name under which gate-control's own executable runs
// as the OCI runtime of a build's RUN steps: buildah runs a symlink of this
// name, and the program's main hands it to RunRuntimeShim. The shim adds
// what a build with egress needs to each step's OCI config (the proxy's
// environment, the build's CA bundle as a read-only file), then executes
// runsc with the arguments it got, unchanged. It adds nothing to the image:
// the environment is the step's, not the image's, and the CA bundle is
// mounted in the sandbox's own /dev, which no layer records.
const ShimName = "codegenie-oci-runtime"

// shimConf is the shim's configuration, in shimConfName beside the
// symlink that buildah runs.
type shimConf struct {
	// Runsc is the runtime the shim executes.
	Runsc string `json:"runsc"`
	// Env is set in every step's process environment, replacing the
	// image's values of the same names.
	Env []string `json:"env,omitempty"`
	// CA is the host path of a CA bundle mounted read-only at CAPath.
	CA string `json:"ca,omitempty"`
}

const shimConfName = "shim.json"

// buildCAPath is where a RUN step reads the build's CA bundle: in the
// sandbox's /dev, a tmpfs of its own that no layer records.
const buildCAPath = "/dev/codegenie/build-ca.pem"

// writeShim makes dir hold the runtime shim for one build: the symlink
// buildah runs and its configuration. It returns the symlink's path.
func writeShim(dir, exe string, conf shimConf) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the runtime shim directory: %w", err)
	}
	b, err := json.Marshal(conf)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, shimConfName), b, 0o600); err != nil {
		return "", fmt.Errorf("writing the runtime shim's configuration: %w", err)
	}
	link := filepath.Join(dir, ShimName)
	if err := os.Symlink(exe, link); err != nil {
		return "", fmt.Errorf("linking the runtime shim: %w", err)
	}
	return link, nil
}

// RunRuntimeShim is the runtime shim: argv is the whole command line as
// buildah ran it, argv[0] the symlink's path. It returns only on error; on
// success runsc replaces the process.
func RunRuntimeShim(argv []string) error {
	if len(argv) == 0 || !filepath.IsAbs(argv[0]) {
		return errors.New("the runtime shim must be run by its absolute path")
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(argv[0]), shimConfName))
	if err != nil {
		return fmt.Errorf("runtime shim: %w", err)
	}
	var conf shimConf
	if err := json.Unmarshal(b, &conf); err != nil {
		return fmt.Errorf("runtime shim: %s: %w", shimConfName, err)
	}
	if !filepath.IsAbs(conf.Runsc) {
		return fmt.Errorf("runtime shim: runsc path %q is not absolute", conf.Runsc)
	}
	args := argv[1:]
	dir := filepath.Dir(argv[0])
	switch sub, bundle := runtimeBundle(args); sub {
	case "create", "run":
		if err := editBundle(filepath.Join(bundle, "config.json"), conf); err != nil {
			return fmt.Errorf("runtime shim: %w", err)
		}
		if conf.CA != "" && len(args) > 0 {
			if err := recordMade(dir, bundle, args[len(args)-1]); err != nil {
				return fmt.Errorf("runtime shim: %w", err)
			}
		}
	case "delete":
		if conf.CA != "" && len(args) > 0 {
			return deleteAndClean(conf.Runsc, args, dir, args[len(args)-1])
		}
	}
	return syscall.Exec(conf.Runsc, append([]string{conf.Runsc}, args...), os.Environ())
}

// recordMade notes, for the container id, the part of the CA mount's path
// that the step's rootfs lacks: runsc creates it there (the rootfs is a
// host directory under overlay2=none), and deleteAndClean removes it, so
// that the committed layer does not keep an empty mount point.
func recordMade(dir, bundle, id string) error {
	rootfs, err := bundleRootfs(bundle)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return err
	}
	defer root.Close()
	rel := strings.TrimPrefix(buildCAPath, "/")
	var made []string
	for p := rel; p != "." && p != ""; p = filepath.Dir(p) {
		if _, err := root.Lstat(p); err == nil {
			break
		}
		made = append(made, p) // deepest first: the order of removal
	}
	if len(made) == 0 || strings.ContainsAny(id, "/\x00") {
		return nil
	}
	b, err := json.Marshal(struct {
		Rootfs string   `json:"rootfs"`
		Made   []string `json:"made"`
	}{rootfs, made})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "made-"+id+".json"), b, 0o600)
}

// deleteAndClean runs runsc delete, then removes what recordMade noted,
// through the rootfs (os.Root: a step that swapped a path component for a
// symlink makes the removal fail, never reach the host).
func deleteAndClean(runscPath string, args []string, dir, id string) error {
	cmd := &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}, Env: os.Environ()}
	p, err := os.StartProcess(runscPath, append([]string{runscPath}, args...), cmd)
	if err != nil {
		return err
	}
	st, err := p.Wait()
	if err != nil {
		return err
	}
	rec := filepath.Join(dir, "made-"+id+".json")
	if b, err := os.ReadFile(rec); err == nil && !strings.ContainsAny(id, "/\x00") {
		var m struct {
			Rootfs string   `json:"rootfs"`
			Made   []string `json:"made"`
		}
		if json.Unmarshal(b, &m) == nil {
			if root, err := os.OpenRoot(m.Rootfs); err == nil {
				for _, p := range m.Made {
					_ = root.Remove(p) // an empty file or directory; not one a step filled
				}
				_ = root.Close()
			}
		}
		_ = os.Remove(rec)
	}
	os.Exit(st.ExitCode())
	return nil
}

// runtimeBundle finds the subcommand of an OCI runtime command line (its
// first argument that is not a flag: buildah writes global flags as
// --name=value) and the bundle directory it names (--bundle, -b; the
// working directory when none).
func runtimeBundle(args []string) (sub, bundle string) {
	i := slices.IndexFunc(args, func(a string) bool { return !strings.HasPrefix(a, "-") })
	if i < 0 {
		return "", ""
	}
	sub, bundle = args[i], "."
	rest := args[i+1:]
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		switch {
		case (a == "--bundle" || a == "-b" || a == "-bundle") && j+1 < len(rest):
			bundle = rest[j+1]
			j++
		case strings.HasPrefix(a, "--bundle="):
			bundle = strings.TrimPrefix(a, "--bundle=")
		case strings.HasPrefix(a, "-bundle="):
			bundle = strings.TrimPrefix(a, "-bundle=")
		}
	}
	return sub, bundle
}

// editBundle adds conf's environment and CA mount to an OCI config. It
// keeps every field it does not know: the config is edited as raw JSON.
func editBundle(path string, conf shimConf) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec map[string]json.RawMessage
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var proc map[string]json.RawMessage
	if err := json.Unmarshal(spec["process"], &proc); err != nil || proc == nil {
		return fmt.Errorf("%s: no process", path)
	}
	var env []string
	if raw, ok := proc["env"]; ok {
		if err := json.Unmarshal(raw, &env); err != nil {
			return fmt.Errorf("%s: process.env: %w", path, err)
		}
	}
	env = mergeEnv(env, conf.Env)
	if proc["env"], err = json.Marshal(env); err != nil {
		return err
	}
	if spec["process"], err = json.Marshal(proc); err != nil {
		return err
	}
	var mounts []json.RawMessage
	if raw, ok := spec["mounts"]; ok {
		if err := json.Unmarshal(raw, &mounts); err != nil {
			return fmt.Errorf("%s: mounts: %w", path, err)
		}
	}
	// buildah gives a RUN --mount=type=cache the "shared" propagation
	// (buildkit's sharing=shared), which runsc refuses: a sandbox's mounts
	// never propagate to the host, so the option means nothing there. (A
	// real service's RUN --mount=type=cache,target=/root/.npm failed with
	// 'mount option "shared" is not supported'.)
	for i, raw := range mounts {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("%s: mounts: %w", path, err)
		}
		var opts []string
		if o, ok := m["options"]; ok {
			if err := json.Unmarshal(o, &opts); err != nil {
				return fmt.Errorf("%s: mount options: %w", path, err)
			}
		}
		kept := slices.DeleteFunc(slices.Clone(opts), func(o string) bool { return o == "shared" || o == "rshared" })
		if len(kept) == len(opts) {
			continue
		}
		if m["options"], err = json.Marshal(kept); err != nil {
			return err
		}
		if mounts[i], err = json.Marshal(m); err != nil {
			return err
		}
	}
	if _, ok := spec["mounts"]; ok {
		if spec["mounts"], err = json.Marshal(mounts); err != nil {
			return err
		}
	}
	if conf.CA != "" {
		m, err := json.Marshal(map[string]any{
			"destination": buildCAPath, "type": "bind", "source": conf.CA,
			"options": []string{"rbind", "ro", "nosuid", "nodev", "noexec"},
		})
		if err != nil {
			return err
		}
		if spec["mounts"], err = json.Marshal(append(mounts, m)); err != nil {
			return err
		}
	}
	out, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	// buildah wrote the config for this step alone, and reads it no more.
	return os.WriteFile(path, out, 0o600)
}

// mergeEnv returns env with add's variables set: an existing entry of the
// same name is replaced.
func mergeEnv(env, add []string) []string {
	names := map[string]bool{}
	for _, kv := range add {
		name, _, _ := strings.Cut(kv, "=")
		names[name] = true
	}
	out := make([]string, 0, len(env)+len(add))
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); !names[name] {
			out = append(out, kv)
		}
	}
	return append(out, add...)
}

// egressEnv is what a RUN step's environment gets for a proxy at addr
// (127.0.0.1:PORT in the step's network namespace) and, when ca is set,
// the build's CA bundle: both spellings of the proxy variables, which npm,
// yarn, pnpm, apt, curl, git and pip read, and the CA settings that add to
// (Node) or replace (OpenSSL, npm, pip) a client's trust. Yarn gets the
// bundle through NODE_EXTRA_CA_CERTS (and Yarn 1 through npm_config_cafile
// too): no YARN_* CA setting is set, since Yarn 4 refuses the legacy names in
// the environment ("Unrecognized or legacy configuration settings found:
// cafile", and caFilePath), which failed actual-server's install.
func egressEnv(addr string, ca bool) []string {
	url := "http://" + addr
	env := []string{
		"HTTP_PROXY=" + url, "http_proxy=" + url,
		"HTTPS_PROXY=" + url, "https_proxy=" + url,
		"NO_PROXY=", "no_proxy=",
		// Yarn 2 and later read their own settings, not the variables
		// above: without these, a step's yarn install resolves the registry
		// itself and fails (getaddrinfo EAI_AGAIN registry.yarnpkg.com).
		"YARN_HTTP_PROXY=" + url, "YARN_HTTPS_PROXY=" + url,
	}
	if ca {
		for _, name := range []string{"NODE_EXTRA_CA_CERTS", "npm_config_cafile",
			"SSL_CERT_FILE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT", "REQUESTS_CA_BUNDLE"} {
			env = append(env, name+"="+buildCAPath)
		}
	}
	return env
}
