package portfolio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/regfile"
)

// Source is one input: a local path or a git URL, and where it was given
// (a --from file's line, or empty for an argument).
type Source struct {
	Spec string
	From string
}

// InputError is bad input: a missing path, an unreadable --from file, a
// clone that fails, an invalid codegenie-portfolio.yaml. The CLI exits 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// ReadSources reads a --from file: one path or git URL per line, blank
// lines and # comments ignored. Relative paths are relative to the file's
// directory.
func ReadSources(file string) ([]Source, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("reading --from %s: %w", file, err)}
	}
	var out []Source
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.ContainsAny(line, " \t") {
			return nil, &InputError{Err: fmt.Errorf("%s:%d: %q: want one path or git URL per line", file, n, Redact(line))}
		}
		if !IsGitURL(line) && !filepath.IsAbs(line) {
			line = filepath.Join(filepath.Dir(file), line)
		}
		out = append(out, Source{Spec: line, From: fmt.Sprintf("%s:%d", file, n)})
	}
	if err := sc.Err(); err != nil {
		return nil, &InputError{Err: fmt.Errorf("reading --from %s: %w", file, err)}
	}
	return out, nil
}

// IsGitURL reports whether s names a remote repository rather than a path:
// a URL with a scheme (https://, ssh://, git://, file://) or scp-like
// user@host:path.
func IsGitURL(s string) bool {
	if i := strings.Index(s, "://"); i > 0 {
		return true
	}
	at, colon := strings.Index(s, "@"), strings.Index(s, ":")
	return at > 0 && colon > at && !strings.Contains(s[:at], "/")
}

// Discovery finds services.
type Discovery struct {
	// Selector lists a repository's images (the task's plugin).
	Selector probe.ImageSelector
	// Workspace is where git URLs are cloned.
	Workspace string
}

// Checkout is one repository on this machine, or one that could not be
// cloned.
type Checkout struct {
	Repo  string // as given, redacted (see Redact)
	Dir   string // absolute; empty when Fail is set
	Label string // unique among the portfolio's checkouts
	// Fail says why the repository could not be cloned: what went wrong
	// and what to do.
	Fail string
}

// Checkouts resolves sources to checkouts: a path that is a git checkout
// (it has .git) is one; a folder without .git whose subdirectories include
// checkouts is a folder of checkouts, each subdirectory with .git one; any
// other directory is one checkout. Git URLs are cloned shallowly into the
// workspace, once: a later run reuses the clone. A URL that cannot be
// cloned is a checkout with Fail set, not an error: one unreachable
// repository does not stop the portfolio. A URL's userinfo is used for
// the clone, and is in no Checkout.
func (d *Discovery) Checkouts(ctx context.Context, sources []Source) ([]Checkout, error) {
	var out []Checkout
	seen := map[string]bool{}
	labels := map[string]int{}
	add := func(repo, dir, fail string) {
		key := dir
		if fail != "" {
			key = "\x00" + repo
		}
		if seen[key] {
			return
		}
		seen[key] = true
		label := repoLabel(repo)
		labels[label]++
		if n := labels[label]; n > 1 {
			label = fmt.Sprintf("%s-%d", label, n)
		}
		out = append(out, Checkout{Repo: repo, Dir: dir, Label: label, Fail: fail})
	}
	for _, s := range sources {
		where := Redact(s.Spec)
		if s.From != "" {
			where = s.From + ": " + where
		}
		if IsGitURL(s.Spec) {
			dir, err := clone(ctx, s.Spec, d.Workspace)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err != nil {
				// The clone's error names the URL.
				fail := err.Error()
				if s.From != "" {
					fail = s.From + ": " + fail
				}
				add(Redact(s.Spec), "", fail)
				continue
			}
			add(Redact(s.Spec), dir, "")
			continue
		}
		abs, err := filepath.Abs(s.Spec)
		if err != nil {
			return nil, &InputError{Err: fmt.Errorf("%s: %w", where, err)}
		}
		fi, err := os.Stat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, &InputError{Err: fmt.Errorf("%s: no such directory; pass a repository checkout or a folder of checkouts", where)}
		case err != nil:
			return nil, &InputError{Err: fmt.Errorf("%s: %w", where, err)}
		case !fi.IsDir():
			return nil, &InputError{Err: fmt.Errorf("%s: is a file, not a directory; list paths in a file with --from", where)}
		}
		if isCheckout(abs) {
			add(s.Spec, abs, "")
			continue
		}
		subs := subCheckouts(abs)
		if len(subs) == 0 {
			add(s.Spec, abs, "")
			continue
		}
		for _, sub := range subs {
			add(filepath.Join(s.Spec, sub), filepath.Join(abs, sub), "")
		}
	}
	return out, nil
}

func isCheckout(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, ".git"))
	return err == nil
}

func subCheckouts(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && isCheckout(filepath.Join(dir, e.Name())) {
			out = append(out, e.Name())
		}
	}
	return out
}

// repoLabel is a short name for a repository: the last segment of its path
// or URL, without .git.
func repoLabel(repo string) string {
	s := strings.TrimRight(filepath.ToSlash(repo), "/")
	if i := strings.LastIndexAny(s, "/:"); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSuffix(s, ".git")
	if s == "" || s == "." || s == ".." {
		s = "repo"
	}
	return s
}

// Services lists the services of one checkout: every Dockerfile with its
// default target, the overrides of its codegenie-portfolio.yaml applied,
// and test images, non-Node images and excluded ones marked skipped. A
// checkout that could not be cloned is one service, named by its label,
// with Fail set.
func (d *Discovery) Services(ctx context.Context, co Checkout) ([]Service, error) {
	if co.Fail != "" {
		return []Service{{ID: co.Label, Repo: co.Repo, Context: ".", Fail: co.Fail}}, nil
	}
	cfg, err := readConfig(co.Dir)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	repo, err := probe.OpenRepo(co.Dir)
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("opening %s: %w", co.Repo, err)}
	}
	refs, err := d.Selector.Images(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("listing the images of %s: %w", co.Repo, err)
	}
	found := map[string]bool{}
	for _, r := range refs {
		found[r.Dockerfile] = true
	}
	for _, df := range cfg.dockerfiles() {
		if !found[df] {
			o, _ := cfg.lookup(df)
			return nil, &InputError{Err: &ConfigError{File: filepath.Join(co.Repo, ConfigFile), Line: o.Line,
				Msg: fmt.Sprintf("dockerfile %s: no such Dockerfile in the repository", df)}}
		}
	}
	out := make([]Service, 0, len(refs))
	for _, r := range refs {
		s := Service{Repo: co.Repo, Dir: co.Dir, Context: ".", Dockerfile: r.Dockerfile, Target: r.Target, Why: r.Why}
		o, has := cfg.lookup(r.Dockerfile)
		switch {
		case has && o.Exclude:
			s.Skip = "excluded by " + ConfigFile
			if o.Reason != "" {
				s.Skip += ": " + o.Reason
			}
		case has:
			if o.Target != "" {
				s.Target, s.Why = o.Target, "target "+o.Target+" from "+ConfigFile
			}
			if o.Context != "" {
				s.Context = o.Context
				s.Why += "; context " + o.Context + " from " + ConfigFile
			}
			s.ProbePaths = o.ProbePaths
		default:
			if why := testImage(r.Dockerfile); why != "" {
				s.Skip = why
			} else if why := notNode(repo, r.Dockerfile); why != "" {
				s.Skip = why
			}
		}
		s.ID = co.Label + ":" + s.Dockerfile + "#" + s.Target
		out = append(out, s)
	}
	return out, nil
}

// Discover lists every service of every source, in source order and then
// by Dockerfile.
func (d *Discovery) Discover(ctx context.Context, sources []Source) ([]Service, error) {
	cos, err := d.Checkouts(ctx, sources)
	if err != nil {
		return nil, err
	}
	var out []Service
	for _, co := range cos {
		ss, err := d.Services(ctx, co)
		if err != nil {
			return nil, err
		}
		out = append(out, ss...)
	}
	return out, nil
}

// maxConfigBytes bounds a repository's ConfigFile.
const maxConfigBytes = 1 << 20

// readConfig reads a repository's ConfigFile, if it has one. The file is
// the repository's: it is read only if it is a regular file (a FIFO would
// block the read for ever), and bounded.
func readConfig(dir string) (*Config, error) {
	p := filepath.Join(dir, ConfigFile)
	data, err := regfile.ReadFile(p, maxConfigBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	return ParseConfig(p, data)
}

// testImage says why a Dockerfile is a test or dev image, by its name:
// Dockerfile.test, *.cypress, *e2e*, *.dev, or one in a test or
// .devcontainer folder (the voting app's result/tests/Dockerfile runs its
// tests with phantomjs).
func testImage(dockerfile string) string {
	lower := strings.ToLower(dockerfile)
	name := path.Base(lower)
	switch {
	case strings.Contains(lower, "e2e"):
		return "a test image: its path contains e2e"
	case strings.Contains(name, "cypress"):
		return "a test image: " + path.Base(dockerfile) + " (cypress)"
	}
	for _, dir := range strings.Split(path.Dir(lower), "/") {
		switch dir {
		case "test", "tests", "__tests__":
			return "a test image: it is in a " + dir + " folder"
		case ".devcontainer":
			return "a development image: it is in .devcontainer"
		}
	}
	for _, tok := range strings.FieldsFunc(name, func(r rune) bool { return r == '.' || r == '-' || r == '_' }) {
		switch tok {
		case "test", "tests", "spec":
			return "a test image: " + path.Base(dockerfile)
		case "dev", "devcontainer":
			return "a development image: " + path.Base(dockerfile)
		}
	}
	return ""
}

// notNode says why a Dockerfile does not build a Node image: no base image
// is node or distroless node, and its build context has no package.json.
// Empty when it does (or when the Dockerfile cannot be read: the pipeline
// then says why).
func notNode(repo *probe.Repo, dockerfile string) string {
	data, err := repo.ReadFile(dockerfile)
	if err != nil {
		return ""
	}
	bases := baseImages(data)
	for _, b := range bases {
		if nodeImage(b) {
			return ""
		}
	}
	for dir := path.Dir(dockerfile); ; dir = path.Dir(dir) {
		if repo.Exists(path.Join(dir, "package.json")) {
			return ""
		}
		if dir == "." || dir == "/" {
			break
		}
	}
	if len(bases) == 0 {
		return ""
	}
	sort.Strings(bases)
	return fmt.Sprintf("not a Node image: its bases (%s) are not node or distroless node, and no package.json is near it", strings.Join(bases, ", "))
}

// baseImages returns the external images a Dockerfile's FROM lines name
// (not earlier stages, not scratch).
func baseImages(data []byte) []string {
	var out []string
	stages := map[string]bool{}
	seen := map[string]bool{}
	text := strings.ReplaceAll(string(data), "\\\r\n", " ")
	text = strings.ReplaceAll(text, "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.EqualFold(f[0], "FROM") {
			continue
		}
		args := f[1:]
		for len(args) > 0 && strings.HasPrefix(args[0], "--") {
			args = args[1:]
		}
		if len(args) == 0 {
			continue
		}
		img := args[0]
		external := !stages[strings.ToLower(img)] && !strings.EqualFold(img, "scratch") && !seen[img]
		if len(args) >= 3 && strings.EqualFold(args[1], "AS") {
			stages[strings.ToLower(args[2])] = true
		}
		if external {
			seen[img] = true
			out = append(out, img)
		}
	}
	return out
}

// nodeImage reports whether an image reference is a node image (node,
// */node, cimg/node, a distroless nodejs image).
func nodeImage(ref string) bool {
	r := strings.ToLower(ref)
	if i := strings.IndexAny(r, "@"); i >= 0 {
		r = r[:i]
	}
	name := r
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.Index(name, ":"); i >= 0 {
		name = name[:i]
	}
	return name == "node" || strings.HasPrefix(name, "nodejs") || strings.HasPrefix(name, "node-") || strings.Contains(r, "${node")
}
