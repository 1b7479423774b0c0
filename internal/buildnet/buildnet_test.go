package buildnet

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseAndFor(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(dir, "tok")
	if err := os.WriteFile(tok, []byte("s3cr3t-value"), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, ".npmrc"), []byte("@corp:registry=https://npm.corp.example/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Parse([]string{"files.example:8443", "deb.example"}, false, ca, []string{"id=npmrc,src=" + tok})
	if err != nil {
		t.Fatal(err)
	}
	e, secrets, _ := s.For(repo)
	for _, want := range []string{DefaultRegistry, "npm.corp.example:443", "files.example:8443", "deb.example"} {
		if !slices.Contains(e.Allow, want) {
			t.Errorf("allow %v lacks %s", e.Allow, want)
		}
	}
	if !e.BaseMirrors || e.Private || len(e.CA) == 0 {
		t.Errorf("egress %+v: want base mirrors, no private, the CA", e)
	}
	if len(secrets) != 1 || secrets[0].ID != "npmrc" || string(secrets[0].Data) != "s3cr3t-value" {
		t.Errorf("secrets %v", secrets)
	}
	if k := s.Key(); strings.Contains(k, "s3cr3t") || !strings.Contains(k, "secret=npmrc") {
		t.Errorf("key %q: want the secret by name only", k)
	}
	var nilS *Settings
	if e, _, _ := nilS.For(repo); e.Online() {
		t.Errorf("nil settings are online: %+v", e)
	}
	off, err := Parse([]string{"none"}, false, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if e, _, _ := off.For(repo); e.Online() || off.Key() == s.Key() {
		t.Errorf("--build-egress none: %+v, key %q", e, off.Key())
	}
}

func TestParseRefuses(t *testing.T) {
	for name, args := range map[string][]string{
		"none and a host": {"none", "x.example"},
		"a URL":           {"https://x.example/"},
	} {
		if _, err := Parse(args, false, "", nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Parse(nil, false, "/nonexistent/ca.pem", nil); err == nil {
		t.Error("a missing CA file: no error")
	}
	if _, err := Parse(nil, false, "", []string{"id=x"}); err == nil || !strings.Contains(err.Error(), "id=NAME,src=FILE") {
		t.Errorf("a secret without src: %v", err)
	}
}

// TestValuesRoundTrip: a Temporal worker's copy of the settings keys the
// cache as the client's does.
func TestValuesRoundTrip(t *testing.T) {
	for _, args := range [][]string{nil, {"none"}, {"a.example", "b.example:8443"}} {
		s, err := Parse(args, true, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ParseBoot([]string{"api.example"}); err != nil {
			t.Fatal(err)
		}
		if err := s.ParseBootEnv([]string{"DATABASE_URL=postgres://db/app"}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(s.Key(), "postgres") {
			t.Errorf("key %q holds a boot env value", s.Key())
		}
		back := FromValues(s.FlagValues(), s.Private, s.CA, s.Secrets, s.Boot, s.BootEnv)
		if back.Key() != s.Key() {
			t.Errorf("%v: key %q after the round trip, want %q", args, back.Key(), s.Key())
		}
	}
}
