package auth_test

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
	"github.com/google/go-cmp/cmp"
)

func at(t time.Time) func() time.Time { return func() time.Time { return t } }

func TestLoadOrCreateKeyFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gate-control.key")
	ring, err := auth.LoadOrCreateKeyFile(path, at(t0))
	if err != nil {
		t.Fatalf("creating: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode = %04o, want 0600", got)
	}
	cur := ring.Current()
	if len(cur.Secret) != auth.SecretBytes || cur.ID == "" {
		t.Errorf("new key has id %q and %d secret bytes", cur.ID, len(cur.Secret))
	}
	if len(ring.Previous()) != 0 {
		t.Errorf("new ring has previous keys: %v", ring.Previous())
	}
	again, err := auth.LoadOrCreateKeyFile(path, at(t0.Add(time.Hour)))
	if err != nil {
		t.Fatalf("loading: %v", err)
	}
	if diff := cmp.Diff(cur, again.Current()); diff != "" {
		t.Errorf("reloaded key (-want +got):\n%s", diff)
	}
	other, err := auth.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "k"), at(t0))
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Equal(cur, other.Current()) {
		t.Error("two new key files have the same key")
	}
	// No temporary files are left behind.
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the key file", len(ents))
	}
}

func TestKeyFileRefused(t *testing.T) {
	t.Parallel()
	valid := func(t *testing.T, path string) {
		if _, err := auth.LoadOrCreateKeyFile(path, at(t0)); err != nil {
			t.Fatal(err)
		}
	}
	write := func(content string) func(*testing.T, string) {
		return func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	secret := `"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="` // 32 bytes
	tests := []struct {
		name     string
		setup    func(*testing.T, string)
		insecure bool
	}{
		{"mode 0644", func(t *testing.T, p string) { valid(t, p); chmod(t, p, 0o644) }, true},
		{"mode 0640", func(t *testing.T, p string) { valid(t, p); chmod(t, p, 0o640) }, true},
		{"mode 0604", func(t *testing.T, p string) { valid(t, p); chmod(t, p, 0o604) }, true},
		{"mode 0610", func(t *testing.T, p string) { valid(t, p); chmod(t, p, 0o610) }, true},
		{"directory", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"empty", write(""), false},
		{"unknown field", write(`{"version":1,"current":{"id":"k1","secret":` + secret + `,"created":"2025-01-01T00:00:00Z"},"extra":true}`), false},
		{"unknown key field", write(`{"version":1,"current":{"id":"k1","secret":` + secret + `,"created":"2025-01-01T00:00:00Z","alg":"none"}}`), false},
		{"wrong version", write(`{"version":2,"current":{"id":"k1","secret":` + secret + `,"created":"2025-01-01T00:00:00Z"}}`), false},
		{"short secret", write(`{"version":1,"current":{"id":"k1","secret":"AQEB","created":"2025-01-01T00:00:00Z"}}`), false},
		{"current expires", write(`{"version":1,"current":{"id":"k1","secret":` + secret + `,"created":"2025-01-01T00:00:00Z","expires":"2025-01-02T00:00:00Z"}}`), false},
		{"previous without expiry", write(`{"version":1,"current":{"id":"k1","secret":` + secret + `,"created":"2025-01-01T00:00:00Z"},"previous":[{"id":"k0","secret":` + secret + `,"created":"2025-01-01T00:00:00Z"}]}`), false},
		{"trailing data", write(`{"version":1,"current":{"id":"k1","secret":` + secret + `,"created":"2025-01-01T00:00:00Z"}} {}`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "gate-control.key")
			tt.setup(t, path)
			before := readFile(t, path)
			_, err := auth.LoadOrCreateKeyFile(path, at(t0))
			if err == nil {
				t.Fatal("LoadOrCreateKeyFile succeeded")
			}
			if got := errors.Is(err, auth.ErrInsecureKeyFile); got != tt.insecure {
				t.Errorf("LoadOrCreateKeyFile: %v; ErrInsecureKeyFile %v, want %v", err, got, tt.insecure)
			}
			_, err = auth.Rotate(path, time.Hour, at(t0))
			if err == nil {
				t.Fatal("Rotate succeeded")
			}
			if got := errors.Is(err, auth.ErrInsecureKeyFile); got != tt.insecure {
				t.Errorf("Rotate: %v; ErrInsecureKeyFile %v, want %v", err, got, tt.insecure)
			}
			if diff := cmp.Diff(before, readFile(t, path)); diff != "" {
				t.Errorf("refused file changed (-want +got):\n%s", diff)
			}
		})
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || isDir(path) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func TestRotateMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "none.key")
	if _, err := auth.Rotate(path, time.Hour, at(t0)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Rotate of a missing file: got %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Rotate created the file: %v", err)
	}
}

func TestRotateOverlap(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gate-control.key")
	ring, err := auth.LoadOrCreateKeyFile(path, at(t0))
	if err != nil {
		t.Fatal(err)
	}
	oldKey := ring.Current()
	v, clk := newVerifier(t, ring, auth.VerifierConfig{})

	rotatedAt := t0.Add(time.Minute)
	ring2, err := auth.Rotate(path, time.Hour, at(rotatedAt))
	if err != nil {
		t.Fatalf("Rotate: %v", err)
	}
	if mode := statMode(t, path); mode != 0o600 {
		t.Errorf("mode after Rotate = %04o, want 0600", mode)
	}
	newKey := ring2.Current()
	if newKey.ID == oldKey.ID {
		t.Fatal("Rotate kept the key id")
	}
	wantPrev := []auth.PreviousKey{{Key: oldKey, Expires: rotatedAt.Add(time.Hour)}}
	if diff := cmp.Diff(wantPrev, ring2.Previous()); diff != "" {
		t.Errorf("Previous (-want +got):\n%s", diff)
	}
	reloaded, err := auth.LoadOrCreateKeyFile(path, at(rotatedAt))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ring2.Current(), reloaded.Current()); diff != "" {
		t.Errorf("reloaded current key (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantPrev, reloaded.Previous()); diff != "" {
		t.Errorf("reloaded previous keys (-want +got):\n%s", diff)
	}
	v.SetKeyRing(reloaded)

	check := func(name string, now time.Time, key auth.Key, want error) {
		t.Helper()
		clk.Set(now)
		req, body := signed(t, http.MethodPost, "/v1/spawn", []byte(name), key, now)
		if _, err := v.Verify(serverSide(req, body), body); !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", name, err, want)
		}
	}
	check("old key in the overlap", rotatedAt.Add(30*time.Minute), oldKey, nil)
	check("new key in the overlap", rotatedAt.Add(30*time.Minute), newKey, nil)
	check("old key at the end of the overlap", rotatedAt.Add(time.Hour), oldKey, auth.ErrKeyExpired)
	check("old key after the overlap", rotatedAt.Add(2*time.Hour), oldKey, auth.ErrKeyExpired)
	check("new key after the overlap", rotatedAt.Add(2*time.Hour), newKey, nil)

	// A second rotation after the overlap drops the expired key; one with
	// no overlap drops the current key at once.
	ring3, err := auth.Rotate(path, 0, at(rotatedAt.Add(2*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(ring3.Previous()); got != 0 {
		t.Errorf("after a rotation with no overlap, %d previous keys, want 0", got)
	}
	v.SetKeyRing(ring3)
	check("rotated out with no overlap", rotatedAt.Add(2*time.Hour), newKey, auth.ErrUnknownKey)
	check("newest key", rotatedAt.Add(2*time.Hour), ring3.Current(), nil)

	if _, err := auth.Rotate(path, -time.Second, at(t0)); err == nil {
		t.Error("Rotate with a negative overlap succeeded")
	}
}

func statMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestKeyFileIsStrictJSON(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gate-control.key")
	if _, err := auth.LoadOrCreateKeyFile(path, at(t0)); err != nil {
		t.Fatal(err)
	}
	content := readFile(t, path)
	for _, field := range []string{`"version": 1`, `"current"`, `"id"`, `"secret"`, `"created": "2025-03-04T05:06:07.5Z"`} {
		if !strings.Contains(content, field) {
			t.Errorf("key file lacks %s:\n%s", field, content)
		}
	}
}
