package image

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// countingResolver is a fake registry: it answers from digests and counts
// the calls per reference.
type countingResolver struct {
	mu      sync.Mutex
	digests map[string]string
	calls   map[string]int
	err     error
}

func newCounting() *countingResolver {
	return &countingResolver{calls: map[string]int{}, digests: map[string]string{
		"node:22":                             "sha256:" + strings.Repeat("a", 64),
		"gcr.io/distroless/nodejs22-debian13": "sha256:" + strings.Repeat("b", 64),
	}}
}

func (r *countingResolver) Digest(_ context.Context, ref string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[ref]++
	if r.err != nil {
		return "", r.err
	}
	if d, ok := r.digests[ref]; ok {
		return d, nil
	}
	if _, d, ok := strings.Cut(ref, "@"); ok {
		return d, nil
	}
	return "", errors.New("manifest unknown")
}

func (r *countingResolver) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		n += c
	}
	return n
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// TestMemo resolves through a Memo step by step, each step a new Memo on
// the same file (a new gather process) unless it says otherwise, and
// counts the round trips to the fake registry.
func TestMemo(t *testing.T) {
	t.Parallel()
	type step struct {
		name      string
		advance   time.Duration
		ref       string
		config    string
		refresh   bool
		corrupt   string // written over the memo file before the step
		wantCalls int    // total calls to the resolver after the step
	}
	const node, distroless = "node:22", "gcr.io/distroless/nodejs22-debian13"
	tests := []struct {
		name  string
		steps []step
	}{
		{"within the TTL, then past it", []step{
			{name: "cold", ref: node, wantCalls: 1},
			{name: "warm", advance: time.Minute, ref: node, wantCalls: 1},
			{name: "same image, spelled in full", advance: time.Minute, ref: "docker.io/library/node:22", wantCalls: 1},
			{name: "another image", ref: distroless, wantCalls: 2},
			{name: "just before the TTL", advance: 8*time.Minute - time.Second, ref: node, wantCalls: 2},
			{name: "past the TTL", advance: 2 * time.Second, ref: node, wantCalls: 3},
			{name: "warm again", advance: time.Minute, ref: node, wantCalls: 3},
		}},
		{"--refresh-images bypasses and re-records", []step{
			{name: "cold", ref: node, wantCalls: 1},
			{name: "refresh", advance: time.Second, ref: node, refresh: true, wantCalls: 2},
			{name: "refresh again", advance: time.Second, ref: node, refresh: true, wantCalls: 3},
			{name: "warm", advance: time.Second, ref: node, wantCalls: 3},
		}},
		{"other mirrors are a miss", []step{
			{name: "direct", ref: node, wantCalls: 1},
			{name: "through a mirror", ref: node, config: "index.docker.io=127.0.0.1:5000", wantCalls: 2},
			{name: "through the mirror, warm", ref: node, config: "index.docker.io=127.0.0.1:5000", wantCalls: 2},
			{name: "direct, warm", ref: node, wantCalls: 2},
		}},
		{"a corrupt file is a miss", []step{
			{name: "garbage", ref: node, corrupt: "\x00not json", wantCalls: 1},
			{name: "rewritten", ref: node, wantCalls: 1},
			{name: "truncated", ref: node, corrupt: `{"version":1,"entries":[{"ref":"index.docker.io/library/node:22"`, wantCalls: 2},
			{name: "a digest that is not one", ref: node, wantCalls: 3,
				corrupt: `{"version":1,"entries":[{"ref":"index.docker.io/library/node:22","config":"","digest":"sha256:../../etc","resolved_at":"2026-12-01T10:00:00Z"}]}`},
			{name: "another version", ref: node, wantCalls: 4,
				corrupt: `{"version":2,"entries":[{"ref":"index.docker.io/library/node:22","config":"","digest":"sha256:` + strings.Repeat("c", 64) + `","resolved_at":"2026-12-01T10:00:00Z"}]}`},
			{name: "from the future", ref: node, wantCalls: 5,
				corrupt: `{"version":1,"entries":[{"ref":"index.docker.io/library/node:22","config":"","digest":"sha256:` + strings.Repeat("c", 64) + `","resolved_at":"2027-12-01T10:00:00Z"}]}`},
			{name: "warm", ref: node, wantCalls: 5},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "cache")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, MemoFile)
			fake := newCounting()
			clk := &clock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
			for _, s := range tc.steps {
				clk.advance(s.advance)
				if s.corrupt != "" {
					if err := os.WriteFile(path, []byte(s.corrupt), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				m := &Memo{Resolver: fake, Path: path, Config: s.config, Refresh: s.refresh, Now: clk.now}
				got, err := m.Digest(t.Context(), s.ref)
				if err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				if want := fake.digests[strings.TrimPrefix(s.ref, "docker.io/library/")]; got != want {
					t.Errorf("%s: digest %s, want %s", s.name, got, want)
				}
				if n := fake.total(); n != s.wantCalls {
					t.Errorf("%s: %d registry calls in all, want %d", s.name, n, s.wantCalls)
				}
			}
		})
	}
}

func TestMemoInOneProcess(t *testing.T) {
	t.Parallel()
	fake := newCounting()
	m := &Memo{Resolver: fake, Path: filepath.Join(t.TempDir(), MemoFile), TTL: time.Hour}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, ref := range []string{"node:22", "gcr.io/distroless/nodejs22-debian13"} {
				if _, err := m.Digest(t.Context(), ref); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	// Concurrent first resolutions may each go out; once recorded, none do.
	before := fake.total()
	for range 3 {
		if _, err := m.Digest(t.Context(), "node:22"); err != nil {
			t.Fatal(err)
		}
	}
	if n := fake.total(); n != before {
		t.Errorf("%d calls after the memo held the answer, want none", n-before)
	}
	// Both entries reached the file.
	got := map[string]string{}
	for _, e := range readMemo(m.Path) {
		got[e.Ref] = e.Digest
	}
	want := map[string]string{
		"index.docker.io/library/node:22":            fake.digests["node:22"],
		"gcr.io/distroless/nodejs22-debian13:latest": fake.digests["gcr.io/distroless/nodejs22-debian13"],
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("memo file (-want +got):\n%s", diff)
	}
}

func TestMemoDoesNotRecord(t *testing.T) {
	t.Parallel()
	pinned := "node@sha256:" + strings.Repeat("d", 64)
	tests := []struct {
		name    string
		ref     string
		err     error
		wantErr bool
	}{
		{"a failed resolution", "node:22", errors.New("connection refused"), true},
		{"an unknown image", "node:404", nil, true},
		{"a reference pinned by digest", pinned, nil, false},
		{"a reference that does not parse", "Not A Ref", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newCounting()
			fake.err = tc.err
			path := filepath.Join(t.TempDir(), MemoFile)
			for i := range 2 {
				m := &Memo{Resolver: fake, Path: path}
				_, err := m.Digest(t.Context(), tc.ref)
				if (err != nil) != tc.wantErr {
					t.Fatalf("run %d: err = %v, want error %v", i, err, tc.wantErr)
				}
			}
			if n := fake.total(); n != 2 {
				t.Errorf("%d resolver calls for two runs, want 2 (nothing recorded)", n)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("memo file written: %v", err)
			}
		})
	}
}

// TestMemoUnwritable still answers when the memo cannot be written.
func TestMemoUnwritable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fake := newCounting()
	m := &Memo{Resolver: fake, Path: filepath.Join(blocker, MemoFile)}
	if d, err := m.Digest(t.Context(), "node:22"); err != nil || d != fake.digests["node:22"] {
		t.Fatalf("Digest = %q, %v", d, err)
	}
}
