package gatecontrol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"runtime"
	"time"

	"github.com/codegenie/codegenie/internal/audit"
	"github.com/codegenie/codegenie/internal/egress"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// Defaults for Config's zero fields.
const (
	DefaultKeyFile       = "/var/lib/codegenie/key"
	DefaultAuditLog      = "/var/lib/codegenie/audit.log"
	DefaultSocket        = "/run/codegenie/gate-control.sock"
	DefaultMaxBodyBytes  = 1 << 20
	DefaultMaxQueue      = 64
	DefaultQueueTimeout  = 10 * time.Minute
	DefaultSpawnTimeout  = 10 * time.Minute
	DefaultMaxTimeout    = time.Hour
	DefaultDrainTimeout  = 30 * time.Second
	DefaultDigestMaxSize = 64 << 20
	DefaultDigestMaxN    = 200_000
	// DefaultRejectInterval is how long unauthenticated rejections are
	// folded into one audit record per peer and reason.
	DefaultRejectInterval = 10 * time.Second
	// DefaultRejectRecords is how many records of unauthenticated
	// rejections one interval writes at most, across all peers.
	DefaultRejectRecords = 16
	// DefaultUnauthBurst and DefaultUnauthRate are the allowance of
	// failed authentications per peer: a burst, then so many per second.
	DefaultUnauthBurst = 20
	DefaultUnauthRate  = 2.0
)

// AuditKeyName is the audit signing key's file name, beside the key file
// unless Config.AuditKeyFile says otherwise.
const AuditKeyName = "audit-key"

// DefaultMaxConcurrent is the default limit of spawns running at once: the
// number of CPUs.
func DefaultMaxConcurrent() int { return runtime.NumCPU() }

// Reaper is the optional ability of a backend to find and remove the
// sandboxes that an earlier gate-control left behind when it crashed. The
// server calls it once, in Start, before it accepts requests, and audits
// each removed item (a sandbox ID, a mount, a directory) as orphan.reaped.
type Reaper interface {
	Reap(ctx context.Context) ([]string, error)
}

// SpawnReaper is a Reaper that also names, for each item it removed, the
// spawn that left it: the audit ID the server gave the backend with
// sandbox.WithAuditID when the spawn started. The server prefers it to
// Reaper, and its orphan.reaped records then carry the spawn's spawn_id,
// which links them to the spawn's spawn.started record.
type SpawnReaper interface {
	ReapSpawns(ctx context.Context) ([]sandbox.Reaped, error)
}

// Config configures a Server. Zero fields take the defaults above; Validate
// refuses the rest of what is wrong.
type Config struct {
	// KeyFile holds the HMAC keys (see auth.LoadOrCreateKeyFile). It is
	// created, with mode 0600 and a new key, when missing. The server
	// re-reads it when it changes, so auth.Rotate takes effect without a
	// restart.
	KeyFile string
	// AuditLog is the audit log file (see package audit), created with
	// mode 0600 when missing. Only one server can have it open.
	AuditLog string
	// AuditKeyFile is the ed25519 key that signs the audit log's
	// checkpoints (see audit.LoadOrCreateKey), created with mode 0600 when
	// missing; its public key is written beside it, with ".pub" appended.
	// Default: AuditKeyName in the key file's directory.
	AuditKeyFile string
	// CheckpointEvery is how many records the audit log holds at most
	// between two signed checkpoints; one is also written at Shutdown.
	// Default audit.DefaultCheckpointEvery.
	CheckpointEvery int

	// Socket is the path of the unix socket to listen on, with mode 0660.
	// Empty means no unix socket.
	Socket string
	// TCPAddr is the host:port to listen on with TLS 1.3. Empty means no
	// TCP listener. It needs TLSCertFile and TLSKeyFile.
	TCPAddr string
	// TLSCertFile and TLSKeyFile are the server's PEM certificate chain
	// and private key.
	TLSCertFile, TLSKeyFile string
	// TLSClientCAFile makes the TLS listener require a client certificate
	// that verifies against the PEM CAs in it. A TCP listener needs it,
	// unless InsecureNoClientCert is set.
	TLSClientCAFile string
	// InsecureNoClientCert lets the TLS listener run without client
	// certificates: anyone who reaches the port can then send requests
	// that only the HMAC refuses. Start logs a warning.
	InsecureNoClientCert bool

	// MaxBodyBytes bounds a request body. Default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxConcurrent is how many spawns run at once. Default
	// DefaultMaxConcurrent().
	MaxConcurrent int
	// MaxQueue is how many more spawns may wait for a free slot; past
	// that, requests get 429. Default DefaultMaxQueue.
	MaxQueue int
	// QueueTimeout is how long a spawn may wait for a slot before it gets
	// 503. Default DefaultQueueTimeout.
	QueueTimeout time.Duration
	// DefaultTimeout is the timeout of a spawn that asks for none.
	// Default DefaultSpawnTimeout, but at most MaxTimeout.
	DefaultTimeout time.Duration
	// MaxTimeout caps every spawn's timeout: a request that asks for more
	// is refused (CodeLimitExceedsCap). Default DefaultMaxTimeout.
	MaxTimeout time.Duration
	// MaxLimits caps every spawn's resources. A request may ask for less
	// of each; one that asks for more is refused (CodeLimitExceedsCap,
	// audited as spawn.rejected), and one that asks for none of a
	// resource runs with the cap. Zero fields take DefaultMaxMemoryBytes,
	// DefaultMaxCPUs, DefaultMaxPIDs, DefaultMaxOutputBytes and
	// DefaultMaxDiskBytes.
	MaxLimits sandbox.Limits
	// EgressCap caps what a build's egress may ask for; the zero value
	// allows no build a network. gate-control serve's default is any
	// public destination ("*"), never a private address.
	EgressCap egress.Cap
	// DrainTimeout is how long Run lets in-flight spawns finish after its
	// context is done, before it cancels them. Default DefaultDrainTimeout.
	DrainTimeout time.Duration

	// RejectInterval is how long requests refused before authentication
	// are tallied, per peer and reason, before one spawn.rejected record
	// with their count is written. Default DefaultRejectInterval.
	RejectInterval time.Duration
	// RejectRecords is how many spawn.rejected records of requests refused
	// before authentication one RejectInterval writes at most, across all
	// peers: past it, the tallies with the fewest requests are folded into
	// one record (peer "(other peers)") that counts their requests and
	// says how many tallies and peers it folded. So the audit log grows by
	// at most this many records per interval, however many addresses
	// send. Default DefaultRejectRecords.
	RejectRecords int
	// UnauthBurst and UnauthRate are how many failed authentications a
	// peer may have at once, and per second after that, before its
	// requests are refused unread (429 rate_limited). Defaults
	// DefaultUnauthBurst and DefaultUnauthRate.
	UnauthBurst int
	UnauthRate  float64

	// DigestMaxBytes is how many bytes of file content the workspace
	// digest reads per spawn; past that, files count by size and mtime
	// (see the package documentation). Default DefaultDigestMaxSize.
	DigestMaxBytes int64
	// DigestMaxFiles is how many workspace entries the digest covers.
	// Default DefaultDigestMaxN.
	DigestMaxFiles int

	// Backend runs the sandboxes. If it also implements Reaper, Start
	// reaps what an earlier run left.
	Backend sandbox.Client
	// BackendName names the backend in the audit log, such as "runsc".
	BackendName string

	// Logger receives operational logs. Default: discard.
	Logger *slog.Logger
	// Now is the server's clock, for authentication and the audit log.
	// Default time.Now.
	Now func() time.Time
}

// withDefaults returns c with the zero fields set.
func (c Config) withDefaults() Config {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = DefaultMaxConcurrent()
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = DefaultMaxQueue
	}
	if c.QueueTimeout == 0 {
		c.QueueTimeout = DefaultQueueTimeout
	}
	if c.MaxTimeout == 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.DefaultTimeout == 0 {
		c.DefaultTimeout = min(DefaultSpawnTimeout, c.MaxTimeout)
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	c.MaxLimits = withDefaultCaps(c.MaxLimits)
	if c.AuditKeyFile == "" && c.KeyFile != "" {
		c.AuditKeyFile = filepath.Join(filepath.Dir(c.KeyFile), AuditKeyName)
	}
	if c.CheckpointEvery == 0 {
		c.CheckpointEvery = audit.DefaultCheckpointEvery
	}
	if c.RejectInterval == 0 {
		c.RejectInterval = DefaultRejectInterval
	}
	if c.RejectRecords == 0 {
		c.RejectRecords = DefaultRejectRecords
	}
	if c.UnauthBurst == 0 {
		c.UnauthBurst = DefaultUnauthBurst
	}
	if c.UnauthRate == 0 {
		c.UnauthRate = DefaultUnauthRate
	}
	if c.DigestMaxBytes == 0 {
		c.DigestMaxBytes = DefaultDigestMaxSize
	}
	if c.DigestMaxFiles == 0 {
		c.DigestMaxFiles = DefaultDigestMaxN
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports what is wrong with c, after the defaults apply to its
// zero fields. It does not touch the file system.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.KeyFile == "" {
		bad("no key file")
	}
	if c.AuditLog == "" {
		bad("no audit log")
	}
	if c.Socket == "" && c.TCPAddr == "" {
		bad("no listener: set a unix socket, a TCP address, or both")
	}
	if c.TCPAddr != "" && (c.TLSCertFile == "" || c.TLSKeyFile == "") {
		bad("the TCP listener needs a TLS certificate and key")
	}
	if c.TCPAddr != "" && c.TLSClientCAFile == "" && !c.InsecureNoClientCert {
		bad("the TLS listener requires client certificates: give their CAs, or choose no client certificates explicitly (insecure)")
	}
	if c.TCPAddr != "" && c.TLSClientCAFile != "" && c.InsecureNoClientCert {
		bad("client CAs given together with no client certificates")
	}
	if c.TCPAddr == "" && (c.TLSCertFile != "" || c.TLSKeyFile != "" || c.TLSClientCAFile != "") {
		bad("TLS files given without a TCP address")
	}
	if c.MaxBodyBytes < 0 {
		bad("negative max body size %d", c.MaxBodyBytes)
	}
	if c.MaxConcurrent < 0 {
		bad("negative max concurrent spawns %d", c.MaxConcurrent)
	}
	if c.RejectInterval < 0 || c.RejectRecords < 0 || c.UnauthBurst < 0 || !(c.UnauthRate >= 0) || math.IsInf(c.UnauthRate, 0) {
		bad("negative or infinite rejection interval, record budget, burst or rate")
	}
	if c.CheckpointEvery < 0 {
		bad("negative checkpoint interval %d", c.CheckpointEvery)
	}
	if c.MaxQueue < 0 {
		bad("negative max queue %d", c.MaxQueue)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"queue timeout", c.QueueTimeout}, {"default timeout", c.DefaultTimeout}, {"max timeout", c.MaxTimeout}, {"drain timeout", c.DrainTimeout}} {
		if d.v < 0 {
			bad("negative %s %v", d.name, d.v)
		}
	}
	if c.DefaultTimeout > c.MaxTimeout {
		bad("default timeout %v is above the max timeout %v", c.DefaultTimeout, c.MaxTimeout)
	}
	if err := validCaps(c.MaxLimits); err != nil {
		errs = append(errs, err)
	}
	if c.DigestMaxBytes < 0 || c.DigestMaxFiles < 0 {
		bad("negative workspace digest bound")
	}
	if c.Backend == nil {
		bad("no sandbox backend")
	}
	if c.BackendName == "" {
		bad("no backend name")
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid gate-control config: %w", err)
	}
	return nil
}
