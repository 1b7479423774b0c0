package gatecontrol

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"unicode/utf8"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/strictjson"
)

// Bounds on what a request puts into an audit record, so that one record
// stays far below audit.MaxRecordBytes whatever the body holds.
const (
	maxAuditArgs     = 64
	maxAuditArgBytes = 512
	maxAuditRole     = 64
	maxAuditReason   = 1024
)

// sent is what the audit log records of a request as it arrived, whether or
// not it decodes: the role as sent and the command.
type sent struct {
	Role string
	Argv []string
}

// decodeSpawnRequest decodes a request body strictly (unknown fields and
// trailing data are errors) and validates it. The error matches
// sandbox.ErrInvalidRole or sandbox.ErrInvalidRequest. Whatever happens, it
// also returns what it could read of the role and command, for the audit
// log: the role as sent (a JSON string's value, or else the raw JSON of the
// field), both cut to the audit bounds.
func decodeSpawnRequest(body []byte) (sandbox.SpawnRequest, sent, error) {
	s := readSent(body)
	var req sandbox.SpawnRequest
	if err := strictjson.Unmarshal(body, &req); err != nil {
		if errors.Is(err, sandbox.ErrInvalidRole) {
			return sandbox.SpawnRequest{}, s, err
		}
		return sandbox.SpawnRequest{}, s, fmt.Errorf("%w: decoding spawn request: %w", sandbox.ErrInvalidRequest, err)
	}
	if err := req.Validate(); err != nil {
		return sandbox.SpawnRequest{}, s, err
	}
	if !filepath.IsAbs(req.Workspace.Dir) {
		return sandbox.SpawnRequest{}, s, fmt.Errorf("%w: workspace %q is not an absolute path", sandbox.ErrInvalidRequest, req.Workspace.Dir)
	}
	return req, s, nil
}

// readSent reads the role and command of a body that may not be a valid
// request. It reads only keys spelled exactly as the schema spells them,
// and nothing of a body with a duplicate key, so that it never reads a
// field differently from decodeSpawnRequest.
func readSent(body []byte) sent {
	var top map[string]json.RawMessage
	if strictjson.Unmarshal(body, &top) != nil {
		return sent{}
	}
	var s sent
	if role := top["role"]; len(role) > 0 {
		var str string
		if json.Unmarshal(role, &str) == nil {
			s.Role = str
		} else {
			s.Role = string(role)
		}
		s.Role = truncate(s.Role, maxAuditRole)
	}
	var argv []string
	if json.Unmarshal(top["command"], &argv) == nil {
		s.Argv = boundArgv(argv)
	}
	var build map[string]json.RawMessage
	if raw, ok := top["build"]; ok && json.Unmarshal(raw, &build) == nil && build != nil && len(s.Argv) == 0 {
		var b struct {
			Dockerfile string
			Targets    []string
			Boot       bool
		}
		// Each field on its own, by its exact key; a wrong type leaves
		// the zero value.
		_ = json.Unmarshal(build["dockerfile"], &b.Dockerfile)
		_ = json.Unmarshal(build["targets"], &b.Targets)
		_ = json.Unmarshal(build["boot"], &b.Boot)
		// A build-and-boot spawn has no command: audit what it builds.
		desc := []string{"(build)", b.Dockerfile}
		for _, t := range b.Targets {
			if t == "" {
				t = "(final)"
			}
			desc = append(desc, "--target="+t)
		}
		if b.Boot {
			desc = append(desc, "(boot)")
		}
		s.Argv = boundArgv(desc)
	}
	return s
}

// boundArgv returns argv cut to the audit bounds; a cut is marked.
func boundArgv(argv []string) []string {
	if argv == nil {
		return nil
	}
	out := make([]string, 0, min(len(argv), maxAuditArgs+1))
	for i, a := range argv {
		if i == maxAuditArgs {
			out = append(out, fmt.Sprintf("...(%d more)", len(argv)-i))
			break
		}
		out = append(out, truncate(a, maxAuditArgBytes))
	}
	return out
}

// truncate cuts s to at most n bytes, on a rune boundary, marking a cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
