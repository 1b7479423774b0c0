package seccheck

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/strictjson"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func TestPodInitConfigGolden(t *testing.T) {
	t.Parallel()
	got, err := PodInitConfig("/run/codegenie/trace.sock")
	if err != nil {
		t.Fatalf("PodInitConfig: %v", err)
	}
	golden := filepath.Join("testdata", "pod-init-config.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("PodInitConfig mismatch (-want +got):\n%s", diff)
	}
}

// TestPodInitConfigShape decodes the file strictly into the shape that
// runsc's boot.InitConfig and seccheck.SessionConfig accept, written out
// here independently of config.go, and checks the names that matter.
func TestPodInitConfigShape(t *testing.T) {
	t.Parallel()
	type point struct {
		Name           string   `json:"name"`
		OptionalFields []string `json:"optional_fields"`
		ContextFields  []string `json:"context_fields"`
	}
	type sink struct {
		Name   string         `json:"name"`
		Config map[string]any `json:"config"`
	}
	type session struct {
		Name          string         `json:"name"`
		Points        []point        `json:"points"`
		IgnoreMissing bool           `json:"ignore_missing"`
		Sinks         []sink         `json:"sinks"`
		Options       map[string]any `json:"options"`
	}
	var cfg struct {
		TraceSession session `json:"trace_session"`
	}
	b, err := PodInitConfig("/tmp/x/trace.sock")
	if err != nil {
		t.Fatalf("PodInitConfig: %v", err)
	}
	if err := strictjson.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("decoding strictly: %v", err)
	}
	ctxFields := []string{"time", "thread_id", "group_id", "parent_thread_group_id", "cwd", "container_id", "credentials", "process_name", "is_exec_session"}
	want := session{
		Name: "Default",
		Points: []point{
			{Name: "container/start", ContextFields: ctxFields},
			{Name: "sentry/execve", OptionalFields: []string{"binary_info", "binary_sha256"}, ContextFields: ctxFields},
			{Name: "sentry/clone", ContextFields: ctxFields},
			{Name: "sentry/task_exit", ContextFields: ctxFields},
			{Name: "syscall/execve/enter", ContextFields: ctxFields},
			{Name: "syscall/execveat/enter", OptionalFields: []string{"fd_path"}, ContextFields: ctxFields},
		},
		Sinks: []sink{{Name: "remote", Config: map[string]any{
			"endpoint":    "/tmp/x/trace.sock",
			"retries":     float64(1000), // runsc requires a JSON number that is an integer
			"backoff":     "100us",
			"backoff_max": "10ms",
		}}},
	}
	if diff := cmp.Diff(want, cfg.TraceSession); diff != "" {
		t.Errorf("trace session mismatch (-want +got):\n%s", diff)
	}
}

func TestPodInitConfigRejects(t *testing.T) {
	t.Parallel()
	for _, endpoint := range []string{"", "trace.sock", "@abstract", "/" + strings.Repeat("x", 107)} {
		if _, err := PodInitConfig(endpoint); err == nil {
			t.Errorf("PodInitConfig(%q) succeeded", endpoint)
		}
	}
}

func TestWritePodInitConfig(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "pod-init.json")
	if err := WritePodInitConfig(file, "/run/trace.sock"); err != nil {
		t.Fatalf("WritePodInitConfig: %v", err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want, err := PodInitConfig("/run/trace.sock")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("file mismatch (-want +got):\n%s", diff)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("file mode = %v, want 0600", perm)
	}
}
