package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/audit"
)

// TestAuditVerifyAdopted is issue 22, item 8: a record forged while
// gate-control was stopped is signed as adopted at its next start, and
// verify --pubkey then names it and exits 1, unless --accept-adopted.
func TestAuditVerifyAdopted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "audit-key")
	key, err := audit.LoadOrCreateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.log")
	l, err := audit.Open(path, audit.WithCheckpoints(key, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(audit.Record{Event: audit.EventSpawnStarted, Role: "gate"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil { // 1 [cp 1]
		t.Fatal(err)
	}
	// The forgery, appended and chained while no gate-control runs.
	forger, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := forger.Append(audit.Record{Event: audit.EventSpawnFinished, SpawnID: "forged"}); err != nil {
		t.Fatal(err)
	}
	forger.Close() // 1 [cp 1] 3
	// The next start signs it as adopted.
	l, err = audit.Open(path, audit.WithCheckpoints(key, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil { // 1 [cp 1] 3 [cp 3, adopted 1]
		t.Fatal(err)
	}
	pub := audit.PublicKeyPath(keyFile)
	adopted := "records 3 were found unsigned by gate-control when it started"

	r := execute(t, t.Context(), "audit", "verify", "--pubkey", pub, path)
	if r.code != ExitNotReady || !strings.Contains(r.stdout, adopted) || !strings.Contains(r.stderr, "adopted records 3") || !strings.Contains(r.stderr, "--accept-adopted") {
		t.Errorf("verify --pubkey with adopted records: exit %d, stdout %q, stderr %q; want 1, naming record 3", r.code, r.stdout, r.stderr)
	}
	r = execute(t, t.Context(), "audit", "verify", "--pubkey", pub, "--accept-adopted", path)
	if r.code != 0 || !strings.Contains(r.stdout, adopted) {
		t.Errorf("--accept-adopted: exit %d, stdout %q, stderr %q; want 0 with the adopted records still named", r.code, r.stdout, r.stderr)
	}
	if r := execute(t, t.Context(), "audit", "verify", "--accept-adopted", path); r.code != ExitUsage {
		t.Errorf("--accept-adopted without --pubkey: exit %d, want %d", r.code, ExitUsage)
	}
}
