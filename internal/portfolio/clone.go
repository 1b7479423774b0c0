package portfolio

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// clone makes a shallow clone of url in workspace, or reuses the one an
// earlier run made. The clone goes to a temporary directory first and is
// renamed into place, so an interrupted clone is never mistaken for a
// checkout. The URL's userinfo is used for the clone but kept nowhere:
// the clone's folder is named after the redacted URL (a rotated token
// reuses it), its origin is the redacted URL, and errors quote the
// redacted URL and git's output with the credentials scrubbed.
func clone(ctx context.Context, url, workspace string) (string, error) {
	shown := Redact(url)
	sum := sha256.Sum256([]byte(shown))
	dir := filepath.Join(workspace, repoLabel(shown)+"-"+hex.EncodeToString(sum[:4]))
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
	repo := filepath.Join(tmp, "repo")
	if err := runGit(ctx, url, "clone", "--quiet", "--depth", "1", "--", url, repo); err != nil {
		return "", fmt.Errorf("cloning %s: %w; check the URL, that this machine can reach it, and its credentials (a git credential helper)", shown, err)
	}
	if shown != url {
		// git keeps the URL it cloned as the origin's, token and all.
		if err := runGit(ctx, url, "-C", repo, "config", "remote.origin.url", shown); err != nil {
			return "", fmt.Errorf("removing the credentials from the clone of %s: %w", shown, err)
		}
	}
	if err := os.Rename(repo, dir); err != nil {
		return "", fmt.Errorf("cloning %s: %w", shown, err)
	}
	return dir, nil
}

// runGit runs git, never prompting, and returns its error output (its
// fatal and error lines, on one line, at most 500 bytes) as the error,
// with url's credentials scrubbed.
func runGit(ctx context.Context, url string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return nil
	}
	msg := gitMessage(scrub(stderr.String(), url))
	if len(msg) > 500 {
		msg = msg[:500]
	}
	if msg == "" {
		msg = scrub(err.Error(), url)
	}
	return errors.New(msg)
}

// scrub is Redact, and also removes url's user and password wherever
// they appear on their own (raw or percent-decoded): git may quote them
// outside a URL.
func scrub(s, url string) string {
	s = Redact(s)
	i := strings.Index(url, "://")
	if i < 0 {
		return s
	}
	rest := url[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return s
	}
	var secrets []string
	for _, part := range strings.SplitN(rest[:at], ":", 2) {
		secrets = append(secrets, part)
		if dec, err := neturl.PathUnescape(part); err == nil {
			secrets = append(secrets, dec)
		}
	}
	for _, sec := range secrets {
		// A short user ("git", "u") is no secret, and replacing it would
		// garble the message.
		if len(sec) >= 8 {
			s = strings.ReplaceAll(s, sec, "***")
		}
	}
	return s
}

// gitMessage is git's error output on one line: its "fatal:" and "error:"
// lines when it has some (the rest is advice), else every line.
func gitMessage(stderr string) string {
	var all, errs []string
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSuffix(strings.TrimSpace(l), ".")
		if l == "" {
			continue
		}
		all = append(all, l)
		if strings.HasPrefix(l, "fatal: ") || strings.HasPrefix(l, "error: ") {
			errs = append(errs, l)
		}
	}
	if len(errs) > 0 {
		all = errs
	}
	return strings.Join(all, "; ")
}
