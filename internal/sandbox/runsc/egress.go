package runsc

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/codegenie/codegenie/internal/egress"
	"github.com/codegenie/codegenie/internal/egress/netns"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// egressRun is the egress proxy of one build spawn (ADR 0012): a network
// namespace that holds only loopback, in which the proxy listens, and
// which every RUN step joins (runsc's host network mode, inside that
// namespace: its only route is the proxy); the proxy itself dials from
// gate-control's namespace, to what the policy allows.
type egressRun struct {
	ns     *netns.Namespace
	proxy  *egress.Proxy
	served chan struct{}
	// allow is the policy's rules, as the report shows them.
	allow []string
	// shim is the runtime shim's path, which buildah runs as runsc.
	shim string
}

// egressRules parses the rules of a request, already checked against the
// server's cap by gate-control.
func egressRules(e sandbox.Egress) ([]egress.Rule, error) {
	var rules []egress.Rule
	for _, s := range e.Allow {
		r, err := egress.ParseRule(s)
		if err != nil {
			return nil, invalid("egress rule %q: %v", s, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// startEgress starts the build's egress proxy when the request asks for a
// network; nil when the build is offline. It runs after the bases are
// pulled: BaseMirrors reads their package sources.
func (br *buildRun) startEgress() (*egressRun, error) {
	e := br.req.Build.Egress
	if !e.Online() && len(e.CA) == 0 {
		return nil, nil
	}
	if br.b.cfg.Shim == "" {
		return nil, invalid("this gate-control gives builds no network: it runs without a runtime shim (runsc.Config.Shim)")
	}
	rules, err := egressRules(e)
	if err != nil {
		return nil, err
	}
	if e.BaseMirrors {
		rules = append(rules, br.baseMirrors()...)
	}
	er := &egressRun{served: make(chan struct{})}
	seen := map[string]bool{}
	var uniq []egress.Rule
	for _, r := range rules {
		if !seen[r.String()] {
			seen[r.String()] = true
			uniq = append(uniq, r)
			er.allow = append(er.allow, r.String())
		}
	}
	sort.Strings(er.allow)
	conf := shimConf{Runsc: br.b.cfg.Runsc}
	if len(e.CA) > 0 {
		conf.CA = br.bh.path("build-ca.pem")
		if err := os.WriteFile(conf.CA, e.CA, 0o644); err != nil {
			return nil, fmt.Errorf("writing the build's CA bundle: %w", err)
		}
	}
	addr := ""
	if e.Online() {
		if err := os.MkdirAll(br.bh.path("n"), 0o700); err != nil {
			return nil, fmt.Errorf("creating the build's network namespace: %w", err)
		}
		ns, l, err := netns.New(br.bh.path("n"))
		if err != nil {
			return nil, fmt.Errorf("creating the build's network namespace: %w", err)
		}
		er.ns = ns
		er.proxy = egress.New(egress.Policy{Allow: uniq, AllowPrivate: e.Private})
		go func() {
			defer close(er.served)
			_ = er.proxy.Serve(l)
		}()
		addr = l.Addr().String()
	} else {
		close(er.served)
	}
	conf.Env = egressEnv(addr, len(e.CA) > 0)
	if addr == "" {
		conf.Env = conf.Env[6:] // the CA settings only: no proxy
	}
	if er.shim, err = writeShim(br.bh.path("shim"), br.b.cfg.Shim, conf); err != nil {
		er.close()
		return nil, err
	}
	return er, nil
}

// close stops the proxy and removes the namespace; idempotent.
func (er *egressRun) close() {
	if er == nil {
		return
	}
	if er.proxy != nil {
		_ = er.proxy.Close()
		<-er.served
	}
	if er.ns != nil {
		_ = er.ns.Close()
	}
}

// budArgs rewrites buildah's network and runtime arguments for the proxy.
func (er *egressRun) budArgs(args []string) []string {
	if er == nil {
		return args
	}
	out := make([]string, 0, len(args)+1)
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--runtime="):
			a = "--runtime=" + er.shim
		case a == "--runtime-flag=network=none" && er.ns != nil:
			// Real sockets, in the namespace whose only listener is
			// the proxy.
			a = "--runtime-flag=network=host"
		case a == "--network=none" && er.ns != nil:
			a = "--network=ns:" + er.ns.Path
		}
		out = append(out, a)
	}
	// buildah would pass its own proxy variables (it has none) to the
	// steps; the shim sets them.
	return append(out, "--http-proxy=false")
}

// report is what the proxy saw, each connection attributed to the build
// step that ran when it began.
func (er *egressRun) report(steps []*step, labels func(*step) string) *sandbox.EgressReport {
	if er == nil || er.proxy == nil {
		return nil
	}
	rep := &sandbox.EgressReport{Allow: er.allow, Dropped: int(er.proxy.Dropped())}
	for _, c := range er.proxy.Conns() {
		ec := sandbox.EgressConn{Host: c.Host, Port: c.Port, Up: c.Up, Down: c.Down, Allowed: c.Allowed, Reason: c.Reason, TLSAbandoned: c.TLSAbandoned}
		if s := stepAt(steps, c.Start); s != nil {
			ec.Phase = labels(s)
		}
		rep.Conns = append(rep.Conns, ec)
	}
	return rep
}

// stepAt is the step that ran at t: the last that began at or before it.
func stepAt(steps []*step, t time.Time) *step {
	var at *step
	for _, s := range steps {
		if !s.start.IsZero() && !s.start.After(t) && (at == nil || s.start.After(at.start)) {
			at = s
		}
	}
	return at
}

// baseMirrors are the apt and apk mirrors the pulled base images' own
// sources name, read from each base's top layer in the base store (a vfs
// layer holds the whole tree). A base that cannot be read adds none.
func (br *buildRun) baseMirrors() []egress.Rule {
	var out []egress.Rule
	for _, dir := range br.baseRootfs() {
		rules, err := egress.MirrorRules(dir)
		if err == nil {
			out = append(out, rules...)
		}
	}
	ok, _ := br.b.cfg.EgressCap.Filter(out)
	return ok
}

// baseRootfs returns the rootfs directories of the build's pulled bases:
// each image's top layer, in whichever store holds it (a vfs layer holds
// the whole tree).
func (br *buildRun) baseRootfs() []string {
	var dirs []string
	roots := []string{br.bh.path("s")}
	if br.b.bases != nil {
		roots = append(roots, br.b.bases.path("s"))
	}
	for _, id := range br.baseIDs {
		for _, root := range roots {
			if d, ok := topLayerDir(root, id); ok {
				dirs = append(dirs, d)
				break
			}
		}
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}

// maxImagesJSON bounds what is read of a store's image list.
const maxImagesJSON = 64 << 20

// topLayerDir is the vfs directory of image id's top layer in the store
// at root, read from the store's own image list.
func topLayerDir(root, id string) (string, bool) {
	f, err := os.Open(filepath.Join(root, "vfs-images", "images.json"))
	if err != nil {
		return "", false
	}
	defer f.Close()
	var images []struct {
		ID    string `json:"id"`
		Layer string `json:"layer"`
	}
	if json.NewDecoder(io.LimitReader(f, maxImagesJSON)).Decode(&images) != nil {
		return "", false
	}
	for _, im := range images {
		if im.ID != id || im.Layer == "" || strings.ContainsAny(im.Layer, "/.") {
			continue
		}
		d := filepath.Join(root, "vfs", "dir", im.Layer)
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d, true
		}
	}
	return "", false
}

// secretPath is where a build secret's bytes wait for buildah, 0600 in
// the spawn's own directory.
func (br *buildRun) secretPath(id string) string {
	return filepath.Join(br.bh.path("secrets"), id)
}

// writeSecrets writes the request's build secrets for buildah's --secret.
func (br *buildRun) writeSecrets() error {
	if len(br.req.Build.Secrets) == 0 {
		return nil
	}
	if err := os.MkdirAll(br.bh.path("secrets"), 0o700); err != nil {
		return fmt.Errorf("creating the build secrets directory: %w", err)
	}
	for _, s := range br.req.Build.Secrets {
		if err := os.WriteFile(br.secretPath(s.ID), s.Data, 0o600); err != nil {
			return fmt.Errorf("writing build secret %s: %w", s.ID, err)
		}
	}
	return nil
}

// minScrubbed is the shortest secret that is scrubbed from what a spawn
// returns: a shorter one would blank common text.
const minScrubbed = 4

// scrubSecrets replaces every build secret's bytes in what the spawn
// returns (phase output, the boot's output, the trace's arguments and
// environment) with "<secret ID>", and every --boot-env value with
// "<boot-env NAME>".
func (br *buildRun) scrubSecrets(res *sandbox.Result) {
	var pairs []string
	for _, s := range br.req.Build.Secrets {
		if len(s.Data) >= minScrubbed {
			pairs = append(pairs, string(s.Data), "<secret "+s.ID+">")
			if t := strings.TrimSpace(string(s.Data)); t != string(s.Data) && len(t) >= minScrubbed {
				pairs = append(pairs, t, "<secret "+s.ID+">")
			}
		}
	}
	for _, kv := range br.req.Build.BootEnv {
		if name, value, _ := strings.Cut(kv, "="); len(value) >= minScrubbed {
			pairs = append(pairs, value, "<boot-env "+name+">")
		}
	}
	if len(pairs) == 0 {
		return
	}
	r := strings.NewReplacer(pairs...)
	for i := range res.Phases {
		res.Phases[i].OutputTail = r.Replace(res.Phases[i].OutputTail)
	}
	res.Stdout, res.Stderr = []byte(r.Replace(string(res.Stdout))), []byte(r.Replace(string(res.Stderr)))
	for i := range res.Trace {
		e := &res.Trace[i]
		for j := range e.Argv {
			e.Argv[j] = r.Replace(e.Argv[j])
		}
		for j := range e.Env {
			e.Env[j] = r.Replace(e.Env[j])
		}
		e.Execfn, e.Binary, e.Cwd = r.Replace(e.Execfn), r.Replace(e.Binary), r.Replace(e.Cwd)
	}
}

// ranSteps are the steps of every target buildah ran.
func (br *buildRun) ranSteps() []*step {
	var out []*step
	for _, tr := range br.targets {
		if tr.log != nil {
			out = append(out, tr.log.steps...)
		}
	}
	return out
}

// stepLabel is a step's phase name.
func (br *buildRun) stepLabel(s *step) string {
	return sandbox.BuildPhase(br.plan.stages[s.stage].label(s.stage), s.num)
}

// noteDenials says, at the end of a failed step's output (where a reader
// of the tail looks first), which connections the egress proxy refused
// during it, and how to allow them: a package manager's own message for a
// refused connection rarely names the cause.
func (br *buildRun) noteDenials(res *sandbox.Result) {
	denied := res.Egress.Denied()
	if len(denied) == 0 {
		return
	}
	for i := range res.Phases {
		p := &res.Phases[i]
		if !p.Failed {
			continue
		}
		var notes []string
		for _, c := range denied {
			if c.Phase == p.Name || !strings.HasPrefix(p.Name, "build:") || !strings.Contains(p.Name, ":step ") {
				notes = append(notes, denialNote(c))
			}
		}
		if len(notes) > 0 {
			p.OutputTail += strings.Join(slices.Compact(notes), "")
		}
	}
}

// denialNote is one refused connection, for people.
func denialNote(c sandbox.EgressConn) string {
	where := ""
	if c.Phase != "" {
		where = " in " + c.Phase
	}
	return fmt.Sprintf("codegenie: the build's egress proxy refused %s:%d%s (%s); allow it with --build-egress %s\n",
		c.Host, c.Port, where, c.Reason, egressFlagValue(c))
}

// egressFlagValue is the --build-egress value that allows c.
func egressFlagValue(c sandbox.EgressConn) string {
	if c.Port == 80 || c.Port == 443 {
		return c.Host
	}
	return fmt.Sprintf("%s:%d", c.Host, c.Port)
}

// startBootEgress starts the boot's own egress proxy when the request
// names boot destinations (Egress.Boot); nil when the boot is offline. It
// returns what the boot's spec and environment get: the namespace, the
// proxy variables, and the CA bundle (mounted in the sandbox's own /dev).
func (br *buildRun) startBootEgress() (*egressRun, []string, string, error) {
	e := br.req.Build.Egress
	if len(e.Boot) == 0 {
		return nil, nil, "", nil
	}
	rules, err := egressRules(sandbox.Egress{Allow: e.Boot})
	if err != nil {
		return nil, nil, "", err
	}
	er := &egressRun{served: make(chan struct{})}
	for _, r := range rules {
		er.allow = append(er.allow, r.String())
	}
	sort.Strings(er.allow)
	if err := os.MkdirAll(br.bh.path("bn"), 0o700); err != nil {
		return nil, nil, "", fmt.Errorf("creating the boot's network namespace: %w", err)
	}
	ns, l, err := netns.New(br.bh.path("bn"))
	if err != nil {
		return nil, nil, "", fmt.Errorf("creating the boot's network namespace: %w", err)
	}
	er.ns = ns
	er.proxy = egress.New(egress.Policy{Allow: rules, AllowPrivate: e.Private})
	go func() {
		defer close(er.served)
		_ = er.proxy.Serve(l)
	}()
	ca := ""
	if len(e.CA) > 0 {
		ca = br.bh.path("boot-ca.pem")
		if err := os.WriteFile(ca, e.CA, 0o644); err != nil {
			er.close()
			return nil, nil, "", fmt.Errorf("writing the boot's CA bundle: %w", err)
		}
	}
	// Node 24 reads the proxy variables itself when NODE_USE_ENV_PROXY is
	// set; older Node only through a proxy-aware client.
	// The service's own loopback (itself; the readiness requests) is
	// not proxied.
	env := append(egressEnv(l.Addr().String(), ca != ""), "NODE_USE_ENV_PROXY=1",
		"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1")
	return er, env, ca, nil
}

// mergeEgress adds the boot's connections (phase "boot") to the build's
// report.
func mergeEgress(build, boot *sandbox.EgressReport) *sandbox.EgressReport {
	if boot == nil {
		return build
	}
	if build == nil {
		build = &sandbox.EgressReport{}
	}
	for _, a := range boot.Allow {
		build.Allow = append(build.Allow, "boot:"+a)
	}
	for _, c := range boot.Conns {
		c.Phase = sandbox.PhaseBoot
		build.Conns = append(build.Conns, c)
	}
	build.Dropped += boot.Dropped
	return build
}
