package seccheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// The JSON below mirrors runsc's boot.InitConfig and seccheck.SessionConfig
// (runsc/boot/seccheck.go, pkg/sentry/seccheck/config.go). runsc decodes the
// file with unknown fields disallowed, and rejects unknown point, optional
// field and context field names unless ignore_missing is set, which is not.

type podInitConfig struct {
	TraceSession traceSession `json:"trace_session"`
}

type traceSession struct {
	Name   string        `json:"name"`
	Points []pointConfig `json:"points"`
	Sinks  []sinkConfig  `json:"sinks"`
}

type pointConfig struct {
	Name           string   `json:"name"`
	OptionalFields []string `json:"optional_fields,omitempty"`
	ContextFields  []string `json:"context_fields"`
}

type sinkConfig struct {
	Name   string       `json:"name"`
	Config remoteConfig `json:"config"`
}

// remoteConfig is the opaque config of the "remote" sink
// (pkg/sentry/seccheck/sinks/remote).
type remoteConfig struct {
	Endpoint   string `json:"endpoint"`
	Retries    int    `json:"retries"`
	Backoff    string `json:"backoff"`
	BackoffMax string `json:"backoff_max"`
}

// contextFields are the context fields every point collects.
var contextFields = []string{
	"time",
	"thread_id",
	"group_id",
	"parent_thread_group_id",
	"cwd",
	"container_id",
	"credentials",
	"process_name",
	"is_exec_session",
}

// PodInitConfig returns the runsc --pod-init-config file that sends the
// exec trace to a Listener at endpoint. It enables container/start,
// sentry/execve (with binary_info and binary_sha256: the sentry hashes
// every file it execs, a memfd too, so that the trace can tell a renamed
// copy of a shell by content; it hashes each file once per sandbox, which
// took about 150 ms for a 100 MB binary here, the size of node),
// sentry/clone, sentry/task_exit,
// syscall/execve/enter and syscall/execveat/enter (with fd_path, so that
// fexecve and dirfd-relative attempts can be named), all with the same
// context fields, and none of the env fields. The remote sink retries a full
// socket 1000 times with a backoff from 100us to 10ms before it drops a
// point. endpoint must be an absolute socket path.
func PodInitConfig(endpoint string) ([]byte, error) {
	if err := checkSocketPath(endpoint); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(endpoint) {
		return nil, fmt.Errorf("checking socket path %q: not absolute", endpoint)
	}
	point := func(name string, optional ...string) pointConfig {
		return pointConfig{Name: name, OptionalFields: optional, ContextFields: contextFields}
	}
	cfg := podInitConfig{TraceSession: traceSession{
		Name: "Default", // the only session runsc supports
		Points: []pointConfig{
			point("container/start"),
			point("sentry/execve", "binary_info", "binary_sha256"),
			point("sentry/clone"),
			point("sentry/task_exit"),
			point("syscall/execve/enter"),
			point("syscall/execveat/enter", "fd_path"),
		},
		Sinks: []sinkConfig{{
			Name: "remote",
			Config: remoteConfig{
				Endpoint:   endpoint,
				Retries:    1000,
				Backoff:    "100us",
				BackoffMax: "10ms",
			},
		}},
	}}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding pod init config: %w", err)
	}
	return append(b, '\n'), nil
}

// WritePodInitConfig writes PodInitConfig(endpoint) to file, mode 0600.
func WritePodInitConfig(file, endpoint string) error {
	b, err := PodInitConfig(endpoint)
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return fmt.Errorf("writing pod init config: %w", err)
	}
	return nil
}
