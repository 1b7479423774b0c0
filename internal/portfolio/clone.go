package portfolio

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// clone makes a shallow clone of url in workspace, or reuses the one an
// earlier run made. The clone goes to a temporary directory first and is
// renamed into place, so an interrupted clone is never mistaken for a
// checkout.
func clone(ctx context.Context, url, workspace string) (string, error) {
	sum := sha256.Sum256([]byte(url))
	dir := filepath.Join(workspace, repoLabel(url)+"-"+hex.EncodeToString(sum[:4]))
	if isCheckout(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(workspace, 0o755); err != nil {
		return "", fmt.Errorf("creating the workspace: %w", err)
	}
	tmp, err := os.MkdirTemp(workspace, ".clone-*")
	if err != nil {
		return "", fmt.Errorf("creating the workspace: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	cmd := exec.CommandContext(ctx, "git", "clone", "--quiet", "--depth", "1", "--", url, filepath.Join(tmp, "repo"))
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 500 {
			msg = msg[:500]
		}
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("cloning %s: %s; check the URL and that this machine can reach it", url, msg)
	}
	if err := os.Rename(filepath.Join(tmp, "repo"), dir); err != nil {
		return "", fmt.Errorf("cloning %s: %w", url, err)
	}
	return dir, nil
}
