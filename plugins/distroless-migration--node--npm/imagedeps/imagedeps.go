// Package imagedeps hands the judged image's installed dependencies from
// the traced build to the dependency scans (docs/adr/0013).
//
// The shell trace asks the sandbox to read the built image's node_modules
// back host-side (sandbox.BuildSpec.ReadNodeModules): a bounded
// sandbox.FileSet of the JavaScript, JSON and script heads the scans
// read. The trace stores it as a content-addressed blob (probe.Output.Blobs)
// and names it in its facts (Ref). The child_process probe, which runs
// after the trace (probe.Desc.After), reads the blob back
// (probe.Handoff), writes it to a private folder and scans the repository
// with that folder standing for its node_modules (probe.Mount):
// the code the image ships, not what the checkout happens to hold. Its
// cache key names the blob's digest, so a warm result read the same bytes.
package imagedeps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/strictjson"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
)

// Source is the probe whose facts name the set: the shell trace.
const Source = "shell_invocation_trace"

// Ref is what the trace's facts say of the image's node_modules: its
// blob's digest and a summary of what was read.
type Ref struct {
	// Digest names the blob (probe.BlobDigest) of the encoded set.
	Digest string `json:"digest"`
	// Workdir is the image's working directory; Roots the node_modules
	// folders read (sandbox.FileSet).
	Workdir string   `json:"workdir"`
	Roots   []string `json:"roots,omitempty"`
	Files   int      `json:"files"`
	Bytes   int64    `json:"bytes"`
	// Symlinks counts the symlinks met and not followed.
	Symlinks int `json:"symlinks,omitempty"`
	// TooLarge lists the files over sandbox.MaxFileSetFile, not read.
	TooLarge []string `json:"too_large,omitempty"`
	// Truncated: the set reached its bounds; files past them are
	// missing.
	Truncated bool `json:"truncated,omitempty"`
	// Unread says why nothing could be read.
	Unread string `json:"unread,omitempty"`
}

// Encode checks a set from the sandbox and encodes it as a blob, with the
// Ref that names it. The encoding is canonical: the same set gives the
// same bytes.
func Encode(set *sandbox.FileSet) ([]byte, *Ref, error) {
	if err := set.Validate(); err != nil {
		return nil, nil, fmt.Errorf("the image's node_modules as the sandbox read them: %w", err)
	}
	blob, err := json.Marshal(set)
	if err != nil {
		return nil, nil, err
	}
	ref := &Ref{Digest: probe.BlobDigest(blob), Workdir: set.Workdir, Roots: set.Roots, Files: len(set.Files), Bytes: set.Bytes(),
		Symlinks: set.Symlinks, TooLarge: set.TooLarge, Truncated: set.Truncated, Unread: set.Unread}
	return blob, ref, nil
}

// Decode reads a blob back, rejecting unknown fields and a set that does
// not validate.
func Decode(blob []byte) (*sandbox.FileSet, error) {
	var set sandbox.FileSet
	if err := strictjson.Unmarshal(blob, &set); err != nil {
		return nil, fmt.Errorf("decoding the image's node_modules: %w", err)
	}
	if err := set.Validate(); err != nil {
		return nil, err
	}
	return &set, nil
}

// RefOf returns the Ref in the trace's facts, nil when they hold none.
func RefOf(facts json.RawMessage) *Ref {
	var f struct {
		NodeModules *Ref `json:"node_modules"`
	}
	if json.Unmarshal(facts, &f) != nil || f.NodeModules == nil || f.NodeModules.Digest == "" {
		return nil
	}
	return f.NodeModules
}

// Earlier returns the Ref of this run's trace, nil when the run traced
// nothing (no sandbox, a build that failed) or read no node_modules.
func Earlier(pctx *probe.Context) *Ref {
	if pctx == nil || pctx.Handoff == nil {
		return nil
	}
	res, ok := pctx.Handoff.Earlier(Source)
	if !ok {
		return nil
	}
	return RefOf(res.Facts)
}

// Installed is the image's node_modules, written out for a scan.
type Installed struct {
	Ref *Ref
	// Repo is a view of the repository with the image's node_modules
	// mounted where its own would be.
	Repo *probe.Repo
	// AppDir is the image folder the repository's root is copied to.
	AppDir string
	// Outside are the roots read that lie outside AppDir (a parent's
	// node_modules, NODE_PATH): the repository has no place for them,
	// so their files are not scanned.
	Outside []string
	// Prefixes are the repository folders the image's files stand in.
	Prefixes []string
	// roots are the image folders mounted, each with its repository
	// folder.
	roots []root
	dir   string
}

// root is an image folder mounted at a repository folder.
type root struct{ image, repo string }

// Holds reports whether rel is a file of the image's node_modules as
// mounted: the image holds it, whatever the Dockerfile's COPYs say.
func (in *Installed) Holds(rel string) bool {
	for _, p := range in.Prefixes {
		if strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

// Close removes the written files.
func (in *Installed) Close() error {
	if in == nil || in.dir == "" {
		return nil
	}
	return os.RemoveAll(in.dir)
}

// Read writes the set the trace handed on to a private folder and returns
// a view of the repository with it mounted; nil when the run has none (Earlier).
// The image folder the repository is copied to is where the judged
// image holds its package.json, else the image's working directory; its
// node_modules is mounted even when the image has none, since the
// image, not the checkout, is what ships.
func Read(ctx context.Context, repo *probe.Repo, pctx *probe.Context) (*Installed, error) {
	ref := Earlier(pctx)
	if ref == nil {
		return nil, nil
	}
	blob, err := pctx.Handoff.Blob(ref.Digest)
	if err != nil {
		return nil, fmt.Errorf("reading the image's node_modules from the trace: %w", err)
	}
	set, err := Decode(blob)
	if err != nil {
		return nil, err
	}
	in := &Installed{Ref: ref, AppDir: set.Workdir}
	if fset, err := images.Files.Of(ctx, repo, pctx); err == nil && fset != nil {
		if p, ok := fset.ImagePath("package.json"); ok {
			in.AppDir = path.Dir(p)
		}
	}
	if in.dir, err = os.MkdirTemp("", "codegenie-image-node-modules-"); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = in.Close()
		}
	}()
	for _, f := range set.Files {
		p := filepath.Join(in.dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, err
		}
		mode := os.FileMode(0o600)
		if f.Exec {
			mode = 0o700
		}
		if err := os.WriteFile(p, f.Data, mode); err != nil {
			return nil, err
		}
	}
	// A file too large to read back stands as an empty one: a require of
	// it still resolves, so the graph reaches it and the scan says it is
	// unread (TooLargeFiles), instead of losing the edge.
	for _, tl := range set.TooLarge {
		p := filepath.Join(in.dir, filepath.FromSlash(path.Clean("/"+tl)))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if f != nil {
			f.Close()
		}
	}
	own := path.Join(in.AppDir, "node_modules")
	if !slices.Contains(set.Roots, own) {
		// The app's folder has none, and a parent's is the first that
		// Node's resolution meets (npm install run where only / held the
		// package.json, then the app copied to /app): it stands for the
		// app's own.
		for _, r := range set.Roots {
			if d := path.Dir(r); d != in.AppDir && (d == "/" || strings.HasPrefix(in.AppDir, d+"/")) {
				own = r
				break
			}
		}
	}
	mounts := []probe.Mount{{Path: "node_modules", Dir: filepath.Join(in.dir, filepath.FromSlash(own))}}
	in.roots = append(in.roots, root{image: own, repo: "node_modules"})
	for _, r := range set.Roots {
		rel, inside := strings.CutPrefix(r, strings.TrimSuffix(in.AppDir, "/")+"/")
		switch {
		case r == own:
		case inside:
			mounts = append(mounts, probe.Mount{Path: rel, Dir: filepath.Join(in.dir, filepath.FromSlash(r))})
			in.roots = append(in.roots, root{image: r, repo: rel})
		default:
			in.Outside = append(in.Outside, r)
		}
	}
	for _, m := range mounts {
		// A folder the image does not have stands as an empty one: it
		// still hides the checkout's, and lists as nothing.
		if err := os.MkdirAll(m.Dir, 0o700); err != nil {
			return nil, err
		}
		in.Prefixes = append(in.Prefixes, m.Path)
	}
	// Packages mounted from a lockfile (gather --deps lockfile) stay
	// where the image has nothing: the image wins where it has a folder.
	for _, m := range repo.Mounts() {
		if !in.Holds(m.Path) && !slices.Contains(in.Prefixes, m.Path) {
			mounts = append(mounts, m)
		}
	}
	if in.Repo, err = probe.OpenRepo(repo.Root); err != nil {
		return nil, err
	}
	if err := in.Repo.AddMounts(mounts...); err != nil {
		return nil, err
	}
	ok = true
	return in, nil
}

// PackagesWhole reports that the image's node_modules were listed whole:
// read back, not cut short, with none outside the application's folder
// left out. Files too large to read leave their own content unread, not
// the list of packages.
func (in *Installed) PackagesWhole() bool {
	r := in.Ref
	return r != nil && r.Unread == "" && !r.Truncated && len(in.Outside) == 0
}

// TooLargeFiles are the files of the image's node_modules over
// sandbox.MaxFileSetFile, not read back, as the repository paths the
// mounted view holds them at (those under Outside's roots have none).
func (in *Installed) TooLargeFiles() []string {
	if in == nil || in.Ref == nil {
		return nil
	}
	var out []string
	for _, p := range in.Ref.TooLarge {
		for _, r := range in.roots {
			if rest, ok := strings.CutPrefix(p, r.image+"/"); ok {
				out = append(out, path.Join(r.repo, rest))
				break
			}
		}
	}
	return out
}

// Partial says, for people, what of the image's node_modules the scan
// could not read: "" when it read all of it.
func (in *Installed) Partial() string {
	var parts []string
	r := in.Ref
	if r.Unread != "" {
		parts = append(parts, "the image's node_modules could not be read back: "+r.Unread)
	}
	if r.Truncated {
		parts = append(parts, fmt.Sprintf("the image's node_modules are larger than the %d MiB or %d files read back; the rest was not scanned", sandbox.MaxFileSetBytes>>20, sandbox.MaxFileSetFiles))
	}
	if n := len(r.TooLarge); n > 0 {
		parts = append(parts, fmt.Sprintf("%d files of the image's node_modules are over %d MiB and were not read (%s)", n, sandbox.MaxFileSetFile>>20, r.TooLarge[0]))
	}
	if len(in.Outside) > 0 {
		parts = append(parts, "node_modules outside the application's folder were not scanned: "+strings.Join(in.Outside, ", "))
	}
	return strings.Join(parts, "; ")
}
