// Package buildnet turns a run's network settings for sandboxed builds
// (gather, migrate and portfolio's --build-egress, --build-ca and
// --build-secret) into what one build spawn asks gate-control for: the
// allow-list its RUN steps may reach through the egress proxy, the CA
// bundle they trust, and the build secrets. See docs/adr/0012-build-egress.md.
package buildnet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/internal/egress"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// DefaultRegistry is the npm registry every online build may reach.
const DefaultRegistry = "registry.npmjs.org"

// Settings are a run's build network settings. A nil *Settings is an
// offline build, as is Offline.
type Settings struct {
	// Offline keeps builds off the network (--build-egress none).
	Offline bool
	// Allow are more HOST[:PORT] destinations (--build-egress).
	Allow []string
	// Private lets the proxy reach loopback and private addresses.
	Private bool
	// CA is a PEM bundle every RUN step trusts (--build-ca).
	CA []byte
	// Secrets are build secrets (--build-secret).
	Secrets []sandbox.Secret
	// Boot are HOST[:PORT] destinations the booted service may reach
	// through a proxy of its own (--boot-egress); empty keeps boots
	// offline.
	Boot []string
	// BootEnv are NAME=value entries for the boots' environment
	// (--boot-env).
	BootEnv []string
}

// Parse checks the flag values and reads the files they name: allow is
// --build-egress (HOST[:PORT], or "none"), ca a PEM file, secrets
// id=NAME,src=FILE values. ParseBoot adds --boot-egress.
func Parse(allow []string, private bool, ca string, secrets []string) (*Settings, error) {
	s := &Settings{Private: private}
	for _, a := range allow {
		for _, f := range strings.Split(a, ",") {
			switch f = strings.TrimSpace(f); f {
			case "":
			case "none":
				s.Offline = true
			default:
				if _, err := egress.ParseRule(f); err != nil {
					return nil, fmt.Errorf("--build-egress %q: %w (want HOST or HOST:PORT)", f, err)
				}
				s.Allow = append(s.Allow, f)
			}
		}
	}
	if s.Offline && len(s.Allow) > 0 {
		return nil, fmt.Errorf("--build-egress none keeps the build offline: it takes no other destination (%s)", strings.Join(s.Allow, ", "))
	}
	if ca != "" {
		b, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("--build-ca: %w", err)
		}
		if len(b) > sandbox.MaxCABytes || !strings.Contains(string(b), "-----BEGIN CERTIFICATE-----") {
			return nil, fmt.Errorf("--build-ca %s: want a PEM bundle of certificates, at most %d KiB", ca, sandbox.MaxCABytes>>10)
		}
		s.CA = b
	}
	for _, v := range secrets {
		sec, err := parseSecret(v)
		if err != nil {
			return nil, err
		}
		s.Secrets = append(s.Secrets, sec)
	}
	return s, nil
}

// ParseBoot checks --boot-egress values (HOST[:PORT]) and adds them.
func (s *Settings) ParseBoot(values []string) error {
	for _, v := range values {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			if _, err := egress.ParseRule(f); err != nil {
				return fmt.Errorf("--boot-egress %q: %w (want HOST or HOST:PORT)", f, err)
			}
			s.Boot = append(s.Boot, f)
		}
	}
	return nil
}

// ParseBootEnv checks --boot-env values: NAME=value, or NAME alone for
// the value this process has (as docker run -e NAME does).
func (s *Settings) ParseBootEnv(values []string) error {
	for _, v := range values {
		name, value, ok := strings.Cut(v, "=")
		if name == "" || strings.ContainsAny(name, " \t") {
			return fmt.Errorf("--boot-env %.40q: want NAME=value or NAME", v)
		}
		if !ok {
			var set bool
			if value, set = os.LookupEnv(name); !set {
				return fmt.Errorf("--boot-env %s: no value given and %s is not set here", name, name)
			}
		}
		s.BootEnv = append(s.BootEnv, name+"="+value)
	}
	return nil
}

// parseSecret reads one id=NAME,src=FILE value.
func parseSecret(v string) (sandbox.Secret, error) {
	var id, src string
	for _, f := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(f, "=")
		switch k {
		case "id":
			id = val
		case "src", "source":
			src = val
		default:
			return sandbox.Secret{}, fmt.Errorf("--build-secret %q: want id=NAME,src=FILE", v)
		}
	}
	if id == "" || src == "" {
		return sandbox.Secret{}, fmt.Errorf("--build-secret %q: want id=NAME,src=FILE", v)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return sandbox.Secret{}, fmt.Errorf("--build-secret %s: %w", id, err)
	}
	if len(b) > sandbox.MaxSecretBytes {
		return sandbox.Secret{}, fmt.Errorf("--build-secret %s: the file is over %d KiB", id, sandbox.MaxSecretBytes>>10)
	}
	return sandbox.Secret{ID: id, Data: b}, nil
}

// For is what a build of the repository at repo asks for: nothing when
// offline; else the npm registry, the registries the repository's own
// configuration names (.npmrc, .yarnrc.yml, pnpm's), --build-egress, and
// the base images' package mirrors. notes say what of the repository's
// configuration could not be read.
func (s *Settings) For(repo string) (e sandbox.Egress, secrets []sandbox.Secret, notes []string) {
	if s == nil {
		return sandbox.Egress{}, nil, nil
	}
	e.CA, secrets = s.CA, s.Secrets
	e.Boot = slices.Clone(s.Boot)
	e.Private = s.Private
	if s.Offline {
		return e, secrets, nil
	}
	allow := []string{DefaultRegistry}
	if root, err := os.OpenRoot(repo); err == nil {
		rules, n, err := egress.RepoRules(root)
		_ = root.Close()
		notes = append(notes, n...)
		if err != nil {
			notes = append(notes, "reading the repository's registry settings: "+err.Error())
		}
		for _, r := range rules {
			allow = append(allow, r.String())
		}
	}
	allow = append(allow, s.Allow...)
	slices.Sort(allow)
	e.Allow = slices.Compact(allow)
	e.BaseMirrors, e.Private = true, s.Private
	return e, secrets, notes
}

// Key is the settings as a probe's cache key holds them: the secrets by
// name only (their bytes never reach a cache), the CA by digest.
func (s *Settings) Key() string {
	if s == nil {
		return "offline"
	}
	var parts []string
	if s.Offline {
		parts = append(parts, "offline")
	} else {
		allow := slices.Clone(s.Allow)
		slices.Sort(allow)
		parts = append(parts, "online", "allow="+strings.Join(allow, ","))
	}
	if s.Private {
		parts = append(parts, "private")
	}
	if len(s.CA) > 0 {
		sum := sha256.Sum256(s.CA)
		parts = append(parts, "ca="+hex.EncodeToString(sum[:8]))
	}
	for _, sec := range s.Secrets {
		parts = append(parts, "secret="+sec.ID)
	}
	if len(s.BootEnv) > 0 {
		// By digest: the values may be credentials.
		sum := sha256.Sum256([]byte(strings.Join(s.BootEnv, "\x00")))
		parts = append(parts, "boot_env="+hex.EncodeToString(sum[:8]))
	}
	if len(s.Boot) > 0 {
		boot := slices.Clone(s.Boot)
		slices.Sort(boot)
		parts = append(parts, "boot="+strings.Join(boot, ","))
	}
	return strings.Join(parts, ";")
}

// FlagValues are the settings as --build-egress values: "none", or the
// extra destinations.
func (s *Settings) FlagValues() []string {
	if s == nil {
		return nil
	}
	if s.Offline {
		return []string{"none"}
	}
	return slices.Clone(s.Allow)
}

// FromValues rebuilds settings from values FlagValues and the other
// fields gave (a Temporal worker's copy of the run's settings).
func FromValues(egress []string, private bool, ca []byte, secrets []sandbox.Secret, boot, bootEnv []string) *Settings {
	s := &Settings{Private: private, CA: ca, Secrets: secrets, Boot: boot, BootEnv: bootEnv}
	for _, e := range egress {
		if e == "none" {
			s.Offline = true
			continue
		}
		s.Allow = append(s.Allow, e)
	}
	return s
}

// Env is what the boots' environment gets (--boot-env); nil for nil
// settings.
func (s *Settings) Env() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.BootEnv)
}
