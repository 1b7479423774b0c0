package fleet

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/codegenie/codegenie/internal/portfolio"
)

// Config is how a Client reaches a Temporal frontend.
type Config struct {
	// HostPort is the frontend, HOST:PORT.
	HostPort string
	// Namespace is the Temporal namespace ("default" when empty).
	Namespace string
	// TLSCAFile is a PEM file of the CAs that sign the server's
	// certificate (empty: the system's). TLSCertFile and TLSKeyFile are a
	// client certificate and its key, for mutual TLS: both or neither. TLS
	// is on when any of them, or APIKey, is set.
	TLSCAFile, TLSCertFile, TLSKeyFile string
	// TLSServerName is the name the server's certificate must hold
	// (default: HostPort's host).
	TLSServerName string
	// APIKey is sent as a bearer token on every call, over TLS only. It is
	// never printed: String and GoString leave it out.
	APIKey string
	// Logger gets the SDK's own log lines at warning level and above (nil:
	// discarded).
	Logger *slog.Logger
}

// String describes the connection without its API key.
func (c Config) String() string {
	s := fmt.Sprintf("%s (namespace %s", c.HostPort, c.Namespace)
	if c.tlsOn() {
		s += ", TLS"
	}
	if c.APIKey != "" {
		s += ", API key"
	}
	return s + ")"
}

// GoString is String, so that %#v does not print the API key either.
func (c Config) GoString() string { return "fleet.Config{" + c.String() + "}" }

func (c Config) tlsOn() bool {
	return c.TLSCAFile != "" || c.TLSCertFile != "" || c.TLSKeyFile != "" || c.TLSServerName != "" || c.APIKey != ""
}

// Validate reports a Config that cannot connect, saying what to fix.
func (c Config) Validate() error {
	if c.HostPort == "" {
		return errors.New("no Temporal frontend: give its HOST:PORT")
	}
	if _, _, err := net.SplitHostPort(c.HostPort); err != nil {
		return fmt.Errorf("the Temporal frontend %q is not HOST:PORT: %w", c.HostPort, err)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return errors.New("a TLS client certificate needs both its certificate file and its key file")
	}
	return nil
}

// tlsConfig is the connection's TLS configuration; nil without TLS.
func (c Config) tlsConfig() (*tls.Config, error) {
	if !c.tlsOn() {
		return nil, nil
	}
	host, _, _ := net.SplitHostPort(c.HostPort)
	t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
	if c.TLSServerName != "" {
		t.ServerName = c.TLSServerName
	}
	if c.TLSCAFile != "" {
		pem, err := os.ReadFile(c.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("reading the Temporal CA file: %w", err)
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the Temporal CA file %s holds no PEM certificate", c.TLSCAFile)
		}
	}
	if c.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("loading the Temporal client certificate %s and key %s: %w", c.TLSCertFile, c.TLSKeyFile, err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

// Client drives portfolio runs on a Temporal server and reads them back,
// with the result store every worker shares: Start a run, Follow it to its
// end, Report its records. It is what 'codegenie portfolio --temporal'
// uses, and it needs no command layer. A Client is safe for concurrent
// use; Close it when done.
type Client struct {
	// Temporal is the connection to the server.
	Temporal client.Client
	// Store is the result store that the workers share.
	Store ResultStore
}

// Dial connects to a Temporal frontend and returns a Client that keeps its
// results in st.
func Dial(ctx context.Context, cfg Config, st ResultStore) (*Client, error) {
	c, err := DialTemporal(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Client{Temporal: c, Store: st}, nil
}

// Close closes the connection to the server. The store stays open: it is
// the caller's.
func (c *Client) Close() { c.Temporal.Close() }

// DialTemporal connects to a Temporal frontend, for callers that need the
// SDK's client itself (a replayer, a test).
func DialTemporal(ctx context.Context, cfg Config) (client.Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	tc, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	quiet := slog.New(levelFilter{logger.Handler(), slog.LevelWarn})
	o := client.Options{HostPort: cfg.HostPort, Namespace: cfg.Namespace, Logger: tlog.NewStructuredLogger(quiet),
		ConnectionOptions: client.ConnectionOptions{TLS: tc}}
	if cfg.APIKey != "" {
		o.Credentials = client.NewAPIKeyStaticCredentials(cfg.APIKey)
	}
	c, err := client.DialContext(ctx, o)
	if err != nil {
		hint := "is the server up ('temporal server start-dev')?"
		if tc != nil {
			hint = "does it serve TLS, with a certificate that the CA file signs for " + tc.ServerName + ", and take this client certificate or API key?"
		}
		return nil, fmt.Errorf("connecting to Temporal at %s: %w; %s", cfg, err, hint)
	}
	return c, nil
}

type levelFilter struct {
	slog.Handler
	min slog.Level
}

func (l levelFilter) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= l.min && l.Handler.Enabled(ctx, lv)
}

func (l levelFilter) WithAttrs(as []slog.Attr) slog.Handler {
	return levelFilter{l.Handler.WithAttrs(as), l.min}
}

func (l levelFilter) WithGroup(n string) slog.Handler {
	return levelFilter{l.Handler.WithGroup(n), l.min}
}

// Register registers a tier's workflow and activities on a worker: a
// static worker runs the workflow, the static activities and the batch
// saves; a sandbox worker runs the sandbox activity alone.
func Register(w worker.Registry, tier portfolio.Tier, a *Activities) {
	switch tier {
	case portfolio.TierStatic:
		w.RegisterWorkflowWithOptions(Portfolio, workflow.RegisterOptions{Name: WorkflowName})
		w.RegisterActivityWithOptions(a.Static, activity.RegisterOptions{Name: ActivityStatic})
		w.RegisterActivityWithOptions(a.SaveBatch, activity.RegisterOptions{Name: ActivitySave})
	case portfolio.TierSandbox:
		w.RegisterActivityWithOptions(a.Sandbox, activity.RegisterOptions{Name: ActivitySandbox})
	}
}

// Queue is a tier's task queue.
func Queue(tier portfolio.Tier) string {
	if tier == portfolio.TierSandbox {
		return QueueSandbox
	}
	return QueueStatic
}

// StartOptions are a portfolio run's options beside its services.
type StartOptions struct {
	Settings    Settings
	Sandbox     bool
	RetryFailed bool
	Concurrency int
	Batch       int
	Static      Timeouts
	SandboxT    Timeouts
	// Sources name each service's code for workers that share no path
	// with the client (see Resolve); nil reads each at its Dir.
	Sources []Source
}

// Started is a started (or, for the same portfolio still running,
// joined) workflow.
type Started struct {
	ID    string `json:"workflow_id"`
	RunID string `json:"run_id"`
}

// Start stores the manifest of services (with their inputs digests) and
// starts the portfolio's workflow. Its ID derives from the manifest, so
// starting the same portfolio while it runs joins that run, and starting
// it after it finished runs it again (each service then answered by its
// bound result).
func (c *Client) Start(ctx context.Context, services []portfolio.Service, digests []string, o StartOptions) (Started, error) {
	if len(digests) != len(services) {
		return Started{}, fmt.Errorf("%d digests for %d services", len(digests), len(services))
	}
	if o.Sources != nil && len(o.Sources) != len(services) {
		return Started{}, fmt.Errorf("%d sources for %d services", len(o.Sources), len(services))
	}
	m := Manifest{Services: services, Digests: digests, Sources: o.Sources}
	if m.Services == nil {
		m.Services, m.Digests = []portfolio.Service{}, []string{}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return Started{}, err
	}
	md, err := c.Store.Put(ctx, data)
	if err != nil {
		return Started{}, err
	}
	in := Input{Manifest: md, Count: len(services), Sandbox: o.Sandbox, RetryFailed: o.RetryFailed, Settings: o.Settings,
		Concurrency: o.Concurrency, Batch: o.Batch, Static: o.Static, SandboxT: o.SandboxT}
	for i, s := range services {
		if s.Skip != "" {
			in.Skipped = append(in.Skipped, i)
		}
	}
	in.defaults()
	idSum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%v\x00%v", md, o.Sandbox, o.RetryFailed))
	id := "codegenie-portfolio-" + hex.EncodeToString(idSum[:])[:20]
	run, err := c.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                QueueStatic,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, WorkflowName, in)
	if err != nil {
		return Started{}, fmt.Errorf("starting the portfolio workflow: %w", err)
	}
	return Started{ID: run.GetID(), RunID: run.GetRunID()}, nil
}

// Snapshot is a portfolio workflow read back: its status and every
// service's outcome so far.
type Snapshot struct {
	ID     string `json:"workflow_id"`
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	// Closed is true once the workflow finished (completed, failed,
	// terminated, canceled or timed out).
	Closed   bool      `json:"closed"`
	Manifest string    `json:"manifest"`
	Outcomes []Outcome `json:"outcomes"`
}

// QueryTimeout bounds the wait for a running workflow's progress query.
const QueryTimeout = 5 * time.Second

// ErrNoWorkflow matches an ID that names no portfolio workflow.
var ErrNoWorkflow = errors.New("no such portfolio workflow")

// ErrNotAnswering matches a workflow that cannot be read now but may be
// later: the server does not answer (a restart), no worker answers the
// progress query, or the workflow is paused.
var ErrNotAnswering = errors.New("the portfolio workflow does not answer")

// Read reads a portfolio workflow back: its progress query while it runs,
// its result once it completed. The outcome lists of its finished runs
// come from the result store.
func (c *Client) Read(ctx context.Context, id string) (*Snapshot, error) {
	d, err := c.Temporal.DescribeWorkflow(ctx, id, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("%w: %s (is --namespace right?)", ErrNoWorkflow, id)
		}
		return nil, fmt.Errorf("reading the portfolio workflow %s: %w: %w", id, ErrNotAnswering, err)
	}
	info := d.RawResponse.GetWorkflowExecutionInfo()
	if info.GetType().GetName() != WorkflowName {
		return nil, fmt.Errorf("%w: %s is a %s workflow", ErrNoWorkflow, id, info.GetType().GetName())
	}
	status := info.GetStatus()
	snap := &Snapshot{ID: id, RunID: info.GetExecution().GetRunId(), Status: strings.ToLower(strings.TrimPrefix(status.String(), "WORKFLOW_EXECUTION_STATUS_"))}
	var p Progress
	switch status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		// A static worker answers the query; with none, it would wait.
		qctx, cancel := context.WithTimeout(ctx, QueryTimeout)
		v, err := c.Temporal.QueryWorkflow(qctx, id, "", QueryProgress)
		timedOut := qctx.Err() != nil
		cancel()
		if err != nil && timedOut && ctx.Err() == nil {
			return nil, fmt.Errorf("%w: %s did not answer its progress query in %s: is a static worker running ('codegenie worker --tier static')?", ErrNotAnswering, id, QueryTimeout)
		}
		if err != nil {
			return nil, fmt.Errorf("querying the portfolio workflow %s: %w: %w", id, ErrNotAnswering, err)
		}
		if err := v.Get(&p); err != nil {
			return nil, err
		}
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		snap.Closed = true
		var r Result
		if err := c.Temporal.GetWorkflow(ctx, id, snap.RunID).Get(ctx, &r); err != nil {
			return nil, fmt.Errorf("reading the portfolio workflow's result: %w", err)
		}
		p = Progress{Manifest: r.Manifest, Count: r.Count, Batches: r.Batches, Base: r.Count}
	case enumspb.WORKFLOW_EXECUTION_STATUS_PAUSED:
		return snap, fmt.Errorf("%w: %s is paused: unpause it with the Temporal CLI or UI", ErrNotAnswering, id)
	case enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED,
		enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW,
		enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		snap.Closed = true
		return snap, fmt.Errorf("the portfolio workflow %s is %s: see 'temporal workflow show --workflow-id %s'", id, snap.Status, id)
	}
	snap.Manifest = p.Manifest
	for _, b := range p.Batches {
		data, err := c.Store.Get(ctx, b)
		if err != nil {
			return nil, err
		}
		var outs []Outcome
		if err := json.Unmarshal(data, &outs); err != nil {
			return nil, fmt.Errorf("the outcome list %s does not decode: %w", b, err)
		}
		snap.Outcomes = append(snap.Outcomes, outs...)
	}
	snap.Outcomes = append(snap.Outcomes, p.Current...)
	for len(snap.Outcomes) < p.Count {
		snap.Outcomes = append(snap.Outcomes, Outcome{State: portfolio.StateQueued})
	}
	return snap, nil
}

// loadManifest reads a manifest from the store.
func loadManifest(ctx context.Context, st ResultStore, digest string) (*Manifest, error) {
	a := &Activities{Store: st}
	return a.manifest(ctx, digest)
}

// record is a service's record from its outcome: the stored record when
// there is one, else what the outcome says.
func record(ctx context.Context, st ResultStore, m *Manifest, i int, o Outcome) (portfolio.Record, error) {
	rec := portfolio.Record{Service: m.Services[i], Digest: m.Digests[i]}
	if !o.Record.IsZero() {
		data, err := Get(ctx, st, o.Record)
		if err != nil {
			return rec, err
		}
		if err := json.Unmarshal(data, &rec); err != nil {
			return rec, fmt.Errorf("the record of %s does not decode: %w", rec.Service.ID, err)
		}
	}
	// A sandbox tier that failed after its retries keeps the static
	// record, with the failure.
	rec.State, rec.Tier = o.State, o.Tier
	if o.State == portfolio.StateFailed && rec.Reason == "" {
		rec.Reason = o.Reason
	}
	if o.State == portfolio.StateSkipped {
		rec.Reason = rec.Service.Skip
	}
	return rec, nil
}

// Report is a portfolio run's records as far as it got, in service order,
// and a SARIF source for portfolio.WriteOutputs that reads each log from
// the store.
type Report struct {
	Records []portfolio.Record
	SARIF   portfolio.SARIFSource
	// Tiers is "static", or "static+sandbox" when a service reached the
	// sandbox tier.
	Tiers string
}

// Report reads every service's record of a snapshot from the store.
func (c *Client) Report(ctx context.Context, snap *Snapshot) (*Report, error) {
	m, err := loadManifest(ctx, c.Store, snap.Manifest)
	if err != nil {
		return nil, err
	}
	if len(snap.Outcomes) != len(m.Services) {
		return nil, fmt.Errorf("the workflow has %d outcomes for %d services", len(snap.Outcomes), len(m.Services))
	}
	recs := make([]portfolio.Record, len(m.Services))
	src := sarifRefs{ctx: ctx, st: c.Store, refs: map[string]Ref{}}
	tiers := "static"
	for i, o := range snap.Outcomes {
		if recs[i], err = record(ctx, c.Store, m, i, o); err != nil {
			return nil, err
		}
		if !o.SARIF.IsZero() {
			src.refs[m.Services[i].ID] = o.SARIF
		}
		if recs[i].Tier == portfolio.TierSandbox {
			tiers = "static+sandbox"
		}
	}
	return &Report{Records: recs, SARIF: src, Tiers: tiers}, nil
}

type sarifRefs struct {
	ctx  context.Context
	st   ResultStore
	refs map[string]Ref
}

func (s sarifRefs) SARIF(id string) ([]byte, error) {
	r, ok := s.refs[id]
	if !ok {
		return nil, nil
	}
	return Get(s.ctx, s.st, r)
}
