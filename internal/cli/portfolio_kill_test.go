package cli

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/codegenie/codegenie/internal/portfolio"
	"github.com/codegenie/codegenie/internal/portfolio/portfoliotest"
	"github.com/codegenie/codegenie/internal/testbin"
)

// TestPortfolioSurvivesKill9 runs the built binary, kills it with SIGKILL
// after a few services finish, runs it again, and checks from the state
// store that every service has exactly one result and that no service
// finished before the kill ran again.
func TestPortfolioSurvivesKill9(t *testing.T) {
	bin := testbin.Path(t)
	src, out, cache := t.TempDir(), t.TempDir(), t.TempDir()
	portfoliotest.Generate(t, src, 30)
	args := []string{"portfolio", "--no-sandbox", "--static-parallel", "1", "--cache-dir", cache, "--out", out, src}

	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "CI=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	finished := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "done ") || strings.HasPrefix(sc.Text(), "failed ") {
			finished++
		}
		if finished == 5 {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	_ = cmd.Wait()
	if finished < 5 {
		t.Fatalf("the run ended after %d services, before the kill", finished)
	}

	before := records(t, out)
	doneBefore := map[string]portfolio.Record{}
	for id, r := range before {
		if r.State == portfolio.StateDone {
			doneBefore[id] = r
		}
	}
	// Records are group-committed, so the last ones reported may not have
	// reached the store before the kill: those services run again, which
	// is not work done twice (their first result was never recorded).
	if len(doneBefore) == 0 {
		t.Fatal("no service recorded done before the kill")
	}

	rerun := exec.Command(bin, args...)
	rerun.Env = append(os.Environ(), "CI=1")
	var errb strings.Builder
	rerun.Stderr = &errb
	if err := rerun.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ExitNotReady {
			t.Fatalf("rerun: %v\n%s", err, errb.String())
		}
	}
	after := records(t, out)
	judged, reran := 0, 0
	for id, r := range after {
		if r.State == portfolio.StateSkipped {
			continue
		}
		judged++
		if r.State != portfolio.StateDone || r.Result == nil {
			t.Errorf("%s: %s after the rerun, want done with a result", id, r.State)
		}
		if r.Runs != 1 {
			t.Errorf("%s: %d pipeline runs recorded, want exactly 1", id, r.Runs)
		}
		if b, ok := doneBefore[id]; ok {
			if !r.Timings.Finished.Equal(b.Timings.Finished) || r.Attempts != b.Attempts {
				t.Errorf("%s was done before the kill and ran again", id)
			}
		} else {
			reran++
		}
	}
	lines := strings.Count(errb.String(), "done ") + strings.Count(errb.String(), "failed ")
	if lines != reran || judged != len(doneBefore)+reran {
		t.Errorf("rerun finished %d services, want the %d not done before the kill (of %d)", lines, reran, judged)
	}
	t.Logf("%d services: %d done before the kill, %d after", judged, len(doneBefore), reran)
}

func records(t *testing.T, out string) map[string]portfolio.Record {
	t.Helper()
	st, err := portfolio.OpenStore(filepath.Join(out, portfolio.StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.All()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
