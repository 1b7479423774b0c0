package runsc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"testing"
)

// runClient runs the request client with the host's node on plan, as
// runRequests runs it in the sandbox, and returns what it printed, line by
// line, through a requestRun.
func runClient(t *testing.T, plan requestPlan) (*requestRun, [][]byte) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("this machine has no node on PATH for the request client: " + err.Error())
	}
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), node, "-e", requestScript, string(b)).CombinedOutput()
	if err != nil {
		t.Fatalf("the request client failed on %s: %v\n%s", b, err, out)
	}
	rr := &requestRun{plan: plan}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
		rr.line(sc.Bytes())
	}
	return rr, lines
}

// TestRequestClientFindsTheService: the client finds the declared port
// listening in /proc/net/tcp and sends the planned requests.
func TestRequestClientFindsTheService(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok " + r.URL.Path)) }))
	defer srv.Close()
	_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(p)
	plan := planRequests(imageConfig{ExposedPorts: map[string]struct{}{p + "/tcp": {}}}, []string{"/healthz"})
	plan.WaitMS, plan.TimeoutMS = 120_000, 60_000
	rr, lines := runClient(t, plan)
	if got, _ := rr.listenedAt(); got != port {
		t.Errorf("listened on %d, want %d; the client printed %q", got, port, lines)
	}
	if len(rr.done) != 2 || rr.done[0].Status != 200 || rr.done[1].Path != "/healthz" || rr.done[1].Status != 200 {
		t.Errorf("requests %+v, want GET / and /healthz answered 200", rr.done)
	}
}

// TestRequestClientWithNoPort: an image with no EXPOSE plans no port; the
// client still runs (it looks for any listening port) and reports, where
// it used to throw on the plan at once.
func TestRequestClientWithNoPort(t *testing.T) {
	t.Parallel()
	plan := planRequests(imageConfig{}, nil)
	// No request is sent: whatever listens on this host is not ours.
	plan.Paths = []string{}
	plan.WaitMS, plan.TimeoutMS = 1000, 1000
	_, lines := runClient(t, plan)
	if len(lines) == 0 {
		t.Fatal("the client printed nothing")
	}
	var first struct {
		Listen int  `json:"listen"`
		NoPort bool `json:"noport"`
	}
	if err := json.Unmarshal(lines[0], &first); err != nil || (first.Listen == 0 && !first.NoPort) {
		t.Errorf("first line %q: want {\"listen\":PORT} or {\"noport\":true}", lines[0])
	}
}
