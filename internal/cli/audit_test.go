package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/audit"
	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
)

// writeLog writes an audit log of n spawn records and returns its path
// and lines.
func writeLog(t *testing.T, n int) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		ev := audit.EventSpawnRequested
		if i%2 == 1 {
			ev = audit.EventSpawnRejected
		}
		if _, err := l.Append(audit.Record{Event: ev, SpawnID: "s" + string(rune('a'+i)), Role: "gate", Argv: []string{"sh", "-c", "echo\nforged"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
}

func writeLines(t *testing.T, path string, lines []string) {
	t.Helper()
	s := strings.Join(lines, "")
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAuditVerify(t *testing.T) {
	t.Parallel()
	path, lines := writeLog(t, 4)
	good := execute(t, t.Context(), "audit", "verify", path)
	if good.code != 0 || !strings.Contains(good.stdout, "ok, 4 records; anchor 4:") {
		t.Fatalf("good log: exit %d, %q %q", good.code, good.stdout, good.stderr)
	}
	anchor := strings.TrimSpace(good.stdout[strings.Index(good.stdout, "anchor ")+len("anchor "):])
	if r := execute(t, t.Context(), "audit", "verify", "--anchor", anchor, path); r.code != 0 {
		t.Errorf("good anchor: exit %d, %s", r.code, r.stderr)
	}

	tampered := map[string]func([]string) []string{
		"flipped byte": func(l []string) []string {
			l[1] = strings.Replace(l[1], `"role":"gate"`, `"role":"gatf"`, 1)
			return l
		},
		"deleted line": func(l []string) []string { return append(l[:1], l[2:]...) },
		"swapped lines": func(l []string) []string {
			l[1], l[2] = l[2], l[1]
			return l
		},
	}
	for name, tamper := range tampered {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "audit.log")
			writeLines(t, p, tamper(append([]string(nil), lines...)))
			r := execute(t, t.Context(), "audit", "verify", p)
			if r.code != ExitNotReady {
				t.Fatalf("exit %d, want %d; stdout %q", r.code, ExitNotReady, r.stdout)
			}
			if strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "is not intact: audit log line ") {
				t.Errorf("error is not one line naming the bad record: %q", r.stderr)
			}
		})
	}

	// Cutting the last record passes the chain, but not the anchor.
	cut := filepath.Join(t.TempDir(), "audit.log")
	writeLines(t, cut, lines[:3])
	if r := execute(t, t.Context(), "audit", "verify", cut); r.code != 0 {
		t.Errorf("cut log without anchor: exit %d", r.code)
	}
	if r := execute(t, t.Context(), "audit", "verify", "--anchor", anchor, cut); r.code != ExitNotReady || !strings.Contains(r.stderr, "removed from the end") {
		t.Errorf("cut log with the anchor: exit %d, %q", r.code, r.stderr)
	}
	for _, bad := range []string{"4", "x:" + strings.Repeat("0", 64), "4:abc"} {
		if r := execute(t, t.Context(), "audit", "verify", "--anchor", bad, path); r.code != ExitUsage {
			t.Errorf("--anchor %q: exit %d, want %d", bad, r.code, ExitUsage)
		}
	}
	if r := execute(t, t.Context(), "audit", "verify"); r.code != ExitUsage {
		t.Errorf("no FILE: exit %d", r.code)
	}
	if r := execute(t, t.Context(), "audit", "verify", filepath.Join(t.TempDir(), "absent")); r.code != ExitNotReady {
		t.Errorf("missing FILE: exit %d", r.code)
	}
}

func TestAuditTail(t *testing.T) {
	t.Parallel()
	path, lines := writeLog(t, 5)
	r := execute(t, t.Context(), "audit", "tail", "-n", "2", path)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(got) != 2 || !strings.Contains(got[0], " #4 spawn.rejected ") || !strings.Contains(got[1], " #5 spawn.requested ") {
		t.Errorf("tail -n 2:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, `"echo\nforged"`) {
		t.Errorf("a requester's newline was not quoted:\n%s", r.stdout)
	}

	// A broken chain: the good records, then exit 1.
	bad := filepath.Join(t.TempDir(), "audit.log")
	writeLines(t, bad, append(append([]string(nil), lines[:2]...), lines[3:]...))
	r = execute(t, t.Context(), "audit", "tail", bad)
	if r.code != ExitNotReady || strings.Count(r.stdout, "\n") != 2 || !strings.Contains(r.stderr, "line 3") {
		t.Errorf("broken log: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestAuditTailFollow(t *testing.T) {
	t.Parallel()
	path, _ := writeLog(t, 3)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Execute(ctx, []string{"audit", "tail", "-n", "1", "--follow", path}, Streams{Out: &out, Err: &errb})
	}()
	waitOutput := func(want string) {
		t.Helper()
		waitFor(t, "audit tail --follow to print "+want, func() bool { return strings.Contains(out.String(), want) })
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("its output:\n%s%s", out.String(), errb.String())
		}
	})
	waitOutput(" #3 ")
	if strings.Contains(out.String(), " #2 ") {
		t.Errorf("-n 1 printed more:\n%s", out.String())
	}
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(audit.Record{Event: audit.EventOrphanReaped, Backend: "gvisor"}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	waitOutput(" #4 orphan.reaped backend=gvisor")
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("follow ended with exit %d: %s", code, errb.String())
	}
}

func TestGateControlRotateKey(t *testing.T) {
	t.Parallel()
	key := filepath.Join(t.TempDir(), "key")
	ring, err := auth.LoadOrCreateKeyFile(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := execute(t, t.Context(), "gate-control", "rotate-key", "--key-file", key, "--overlap", "1h")
	if r.code != 0 || !strings.Contains(r.stdout, "current key: ") || !strings.Contains(r.stdout, "previous key: "+ring.Current().ID) {
		t.Fatalf("rotate-key: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	after, err := auth.LoadOrCreateKeyFile(key, nil)
	if err != nil || after.Current().ID == ring.Current().ID {
		t.Errorf("the key file still has the old current key (%v)", err)
	}
	if r := execute(t, t.Context(), "gate-control", "rotate-key", "--key-file", filepath.Join(t.TempDir(), "absent")); r.code != ExitNotReady {
		t.Errorf("rotate-key of a missing file: exit %d", r.code)
	}
	if r := execute(t, t.Context(), "gate-control", "rotate-key", "--key-file", key, "--overlap", "-1h"); r.code != ExitUsage {
		t.Errorf("negative overlap: exit %d", r.code)
	}
}

func TestGateControlServeFlagErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := []string{"gate-control", "serve", "--key-file", dir + "/key", "--audit-log", dir + "/audit.log", "--state-dir", "/tmp/cg-flagtest"}
	for name, extra := range map[string][]string{
		"no listener":            {"--socket", ""},
		"tcp without tls":        {"--listen", "127.0.0.1:0"},
		"tls without client CAs": {"--listen", "127.0.0.1:0", "--tls-cert", dir + "/c.pem", "--tls-key", dir + "/k.pem"},
		"unknown backend":        {"--backend", "docker"},
		"bad platform":           {"--platform", "kvm"},
		"relative state":         {"--state-dir", "runsc"},
		"default above max":      {"--default-timeout", "2h", "--timeout", "1h"},
		"negative disk cap":      {"--disk", "-1"},
		"negative cpus cap":      {"--cpus", "-0.5"},
	} {
		r := execute(t, t.Context(), append(append([]string(nil), base...), extra...)...)
		if r.code != ExitUsage || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want a one-line usage error", name, r.code, r.stderr)
		}
	}
	if _, err := os.Stat("/tmp/cg-flagtest"); err == nil {
		t.Error("a refused serve created its state directory")
	}
}

// TestAuditVerifyPubkey is the attack of issue 10, item 8, at the command
// line: a correctly chained forged append passes the chain, but verify
// --pubkey reports it as the unsigned tail and exits 1.
func TestAuditVerifyPubkey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "audit-key")
	key, err := audit.LoadOrCreateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.log")
	l, err := audit.Open(path, audit.WithCheckpoints(key, 2))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := l.Append(audit.Record{Event: audit.EventSpawnStarted, Role: "gate"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	pub := audit.PublicKeyPath(keyFile)

	r := execute(t, t.Context(), "audit", "verify", "--pubkey", pub, path)
	if r.code != 0 || !strings.Contains(r.stdout, "records 1-4 signed by key") {
		t.Fatalf("verify of a signed log: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	p := execute(t, t.Context(), "gate-control", "audit-pubkey", "--audit-key", keyFile)
	if want, _ := os.ReadFile(pub); p.code != 0 || p.stdout != string(want) {
		t.Errorf("audit-pubkey: exit %d, %q; want the public key file %q", p.code, p.stdout, want)
	}

	// The forgery, chained correctly.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rd := audit.NewReader(bytes.NewReader(b))
	for {
		if _, err := rd.Next(); err != nil {
			break
		}
	}
	head := rd.Anchor()
	line, err := json.Marshal(audit.Record{Seq: head.Seq + 1, Time: time.Now().UTC(), Event: audit.EventSpawnFinished, SpawnID: "forged", Prev: head.Hash})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(append(b, line...), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := execute(t, t.Context(), "audit", "verify", path); r.code != 0 {
		t.Fatalf("chain-only verify: exit %d; the forgery keeps the chain", r.code)
	}
	r = execute(t, t.Context(), "audit", "verify", "--pubkey", pub, path)
	if r.code != ExitNotReady || !strings.Contains(r.stderr, "unsigned tail: records 6 follow the last checkpoint") {
		t.Errorf("verify --pubkey of the forgery: exit %d, %q %q; want 1 and the unsigned tail", r.code, r.stdout, r.stderr)
	}
	r = execute(t, t.Context(), "audit", "verify", "--pubkey", pub, "--allow-unsigned-tail", path)
	if r.code != 0 || !strings.Contains(r.stdout, "unsigned tail") {
		t.Errorf("--allow-unsigned-tail: exit %d, %q; want 0 with the tail still reported", r.code, r.stdout)
	}
	other := filepath.Join(dir, "other-key")
	if _, err := audit.LoadOrCreateKey(other); err != nil {
		t.Fatal(err)
	}
	r = execute(t, t.Context(), "audit", "verify", "--pubkey", audit.PublicKeyPath(other), path)
	if r.code != ExitNotReady || !strings.Contains(r.stderr, "signed by key") {
		t.Errorf("verify with another key: exit %d, %q", r.code, r.stderr)
	}
}
