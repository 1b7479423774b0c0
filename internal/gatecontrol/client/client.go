// Package client provides Client, the sandbox.Client that runs spawns
// through gate-control over its unix socket or over TLS 1.3, signing each
// request with a key from gate-control's key file. StartPrivate starts a
// private gate-control child process for a single command run as root.
//
// It does not run sandboxes or hold the backend configuration: gate-control
// does. It does not retry: a refused or failed request is the caller's
// error.
package client

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codegenie/codegenie/internal/gatecontrol"
	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/strictjson"
)

// DefaultMaxResponseBytes bounds a response body by default.
const DefaultMaxResponseBytes = 256 << 20

// Config configures a Client: exactly one of Socket and Address, and the
// key file.
type Config struct {
	// Socket is the path of gate-control's unix socket.
	Socket string
	// Address is the host:port of gate-control's TLS listener. An Address
	// that is a socket path by the rule of ParseTarget (such as a relative
	// "gc/gc.sock") is taken as Socket.
	Address string
	// ServerName is the name the server's certificate must have. Default:
	// the host of Address.
	ServerName string
	// CAFile holds the PEM CAs that verify the server's certificate. It
	// is required with Address.
	CAFile string
	// ClientCertFile and ClientKeyFile are a PEM certificate and key to
	// present when gate-control verifies client certificates.
	ClientCertFile, ClientKeyFile string
	// KeyFile is gate-control's key file (see auth.LoadOrCreateKeyFile),
	// or a copy of it. Requests are signed with its current key. It must
	// exist; the client never creates it. It is read again when it
	// changes, so a rotation reaches running clients.
	KeyFile string
	// MaxResponseBytes bounds a response. Default DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Now is the clock requests are signed with. Default time.Now.
	Now func() time.Time
}

// ParseTarget splits a gate-control address as a user writes it, such as
// gather's --gate-control, into a unix socket path or a TLS host:port. It
// is a socket path when it starts with "unix:" (which is cut off), contains
// a "/", or names an existing socket file; otherwise it is a host:port.
// Exactly one of the results is non-empty, unless s is empty.
func ParseTarget(s string) (socket, address string) {
	if p, ok := strings.CutPrefix(s, "unix:"); ok {
		return p, ""
	}
	if isSocketPath(s) {
		return s, ""
	}
	return "", s
}

func isSocketPath(s string) bool {
	if strings.Contains(s, "/") {
		return true
	}
	fi, err := os.Stat(s)
	return err == nil && fi.Mode().Type() == os.ModeSocket
}

// resolved returns c with an Address that is a socket path moved to
// Socket.
func (c Config) resolved() Config {
	if c.Socket == "" && c.Address != "" {
		c.Socket, c.Address = ParseTarget(c.Address)
	}
	return c
}

// Validate reports what is wrong with c. It touches the file system only
// to see whether Address names a socket.
func (c Config) Validate() error {
	c = c.resolved()
	var errs []error
	switch {
	case c.Socket == "" && c.Address == "":
		errs = append(errs, errors.New("no gate-control address: set a socket or a TLS address"))
	case c.Socket != "" && c.Address != "":
		errs = append(errs, errors.New("both a socket and a TLS address: choose one"))
	case c.Address != "" && c.CAFile == "":
		errs = append(errs, errors.New("a TLS address needs a CA file"))
	case c.Socket != "" && (c.CAFile != "" || c.ClientCertFile != "" || c.ClientKeyFile != ""):
		errs = append(errs, errors.New("TLS files given for a unix socket"))
	}
	if (c.ClientCertFile == "") != (c.ClientKeyFile == "") {
		errs = append(errs, errors.New("a client certificate needs both its certificate and key files"))
	}
	if c.KeyFile == "" {
		errs = append(errs, errors.New("no key file"))
	}
	if c.MaxResponseBytes < 0 {
		errs = append(errs, fmt.Errorf("negative max response size %d", c.MaxResponseBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid gate-control client config: %w", err)
	}
	return nil
}

// Client runs spawns through gate-control. It is safe for concurrent use.
// Cancelling a Spawn's context aborts its request, and gate-control then
// kills the sandbox.
type Client struct {
	base    string
	hc      *http.Client
	tr      *http.Transport
	maxResp int64
	now     func() time.Time

	mu      sync.Mutex
	keyFile string
	key     auth.Key
	stamp   keyStamp
}

var _ sandbox.Client = (*Client)(nil)

// New returns a Client for cfg. It reads the key file and the TLS files
// now; it does not connect.
func New(cfg Config) (*Client, error) {
	cfg = cfg.resolved()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Client{maxResp: cfg.MaxResponseBytes, now: cfg.Now, keyFile: cfg.KeyFile}
	if c.maxResp == 0 {
		c.maxResp = DefaultMaxResponseBytes
	}
	if c.now == nil {
		c.now = time.Now
	}
	if _, err := c.signingKey(); err != nil {
		return nil, err
	}
	c.tr = &http.Transport{
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	if cfg.Socket != "" {
		// Relative to the directory New ran in, whatever the process
		// does later.
		socket, err := filepath.Abs(cfg.Socket)
		if err != nil {
			return nil, fmt.Errorf("resolving gate-control socket path: %w", err)
		}
		c.tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}
		c.base = "http://gate-control"
	} else {
		tc, err := tlsConfig(cfg)
		if err != nil {
			return nil, err
		}
		c.tr.TLSClientConfig = tc
		c.tr.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		c.tr.TLSHandshakeTimeout = 30 * time.Second
		c.base = "https://" + cfg.Address
	}
	c.hc = &http.Client{
		Transport: c.tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("gate-control does not redirect")
		},
	}
	return c, nil
}

func tlsConfig(cfg Config) (*tls.Config, error) {
	pem, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("loading gate-control CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("loading gate-control CA: no PEM certificate in %s", cfg.CAFile)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, ServerName: cfg.ServerName}
	if tc.ServerName == "" {
		host, _, err := net.SplitHostPort(cfg.Address)
		if err != nil {
			return nil, fmt.Errorf("gate-control address %q: %w", cfg.Address, err)
		}
		tc.ServerName = host
	}
	if cfg.ClientCertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.ClientCertFile, cfg.ClientKeyFile)
		if err != nil {
			return nil, fmt.Errorf("loading client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Close closes idle connections. The Client stays usable.
func (c *Client) Close() error {
	c.tr.CloseIdleConnections()
	return nil
}

// Spawn runs req through gate-control. It validates req first, and makes a
// relative workspace absolute (gate-control runs elsewhere). Errors from
// gate-control match the sandbox package's errors where one fits (see
// ServerError); a spawn that timed out returns its partial Result with an
// error matching sandbox.ErrTimeout, as a backend does.
func (c *Client) Spawn(ctx context.Context, req sandbox.SpawnRequest) (sandbox.Result, error) {
	if err := req.Validate(); err != nil {
		return sandbox.Result{}, err
	}
	if !filepath.IsAbs(req.Workspace.Dir) {
		abs, err := filepath.Abs(req.Workspace.Dir)
		if err != nil {
			return sandbox.Result{}, fmt.Errorf("%w: workspace: %w", sandbox.ErrInvalidRequest, err)
		}
		req.Workspace.Dir = abs
	}
	body, err := json.Marshal(req)
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("%w: encoding request: %w", sandbox.ErrInvalidRequest, err)
	}
	progress := sandbox.ProgressFrom(ctx)
	path := gatecontrol.SpawnPath
	if progress != nil {
		path = gatecontrol.SpawnStreamPath
	}
	resp, err := c.do(ctx, http.MethodPost, path, body)
	if err != nil {
		return sandbox.Result{}, err
	}
	defer closeBody(resp)
	if progress != nil && resp.StatusCode == http.StatusOK {
		return c.readStream(resp, progress)
	}
	b, err := c.readBody(resp)
	if err != nil {
		return sandbox.Result{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return responseError(resp.StatusCode, b)
	}
	var res sandbox.Result
	if err := strictjson.Unmarshal(b, &res); err != nil {
		return sandbox.Result{}, fmt.Errorf("decoding gate-control result: %w", err)
	}
	return res, nil
}

// readStream reads a SpawnStreamPath answer: it hands each progress frame
// to progress, and returns the outcome of the last frame. Every line is
// bounded as a whole response is.
func (c *Client) readStream(resp *http.Response, progress sandbox.ProgressFunc) (sandbox.Result, error) {
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := readLine(br, c.maxResp)
		if err != nil {
			return sandbox.Result{}, fmt.Errorf("reading gate-control progress stream: %w", err)
		}
		var f gatecontrol.StreamFrame
		if err := strictjson.Unmarshal(line, &f); err != nil {
			return sandbox.Result{}, fmt.Errorf("decoding gate-control progress stream: %w", err)
		}
		switch {
		case f.Result != nil:
			return *f.Result, nil
		case f.Error != nil:
			b, err := json.Marshal(f.Error)
			if err != nil {
				return sandbox.Result{}, fmt.Errorf("decoding gate-control progress stream: %w", err)
			}
			return responseError(f.Status, b)
		case f.Progress != nil && f.Progress.Kind.Valid():
			progress(*f.Progress)
		}
	}
}

// readLine reads one line of at most limit bytes, without its newline.
func readLine(br *bufio.Reader, limit int64) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if int64(len(line)) > limit+1 {
			return nil, fmt.Errorf("a line longer than %d bytes", limit)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return nil, errors.New("the stream ended without an outcome")
		default:
			return nil, err
		}
	}
}

// Ping checks that gate-control answers and accepts this client's key.
func (c *Client) Ping(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodGet, gatecontrol.PingPath, nil)
	if err != nil {
		return err
	}
	defer closeBody(resp)
	b, err := c.readBody(resp)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusNoContent {
		_, err := responseError(resp.StatusCode, b)
		return err
	}
	return nil
}

// do sends one signed request.
func (c *Client) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("calling gate-control: %w", err)
	}
	if body != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	key, err := c.signingKey()
	if err != nil {
		return nil, err
	}
	if err := auth.Sign(hreq, body, key, c.now()); err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("calling gate-control: %w", err)
	}
	return resp, nil
}

func (c *Client) readBody(resp *http.Response) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxResp+1))
	if err != nil {
		return nil, fmt.Errorf("reading gate-control response: %w", err)
	}
	if int64(len(b)) > c.maxResp {
		return nil, fmt.Errorf("reading gate-control response: longer than %d bytes", c.maxResp)
	}
	return b, nil
}

// Errors for gate-control answers that no sandbox error describes,
// matched with errors.Is on a *ServerError.
var (
	// ErrUnauthorized: gate-control did not accept the request's
	// signature (wrong or expired key, clock skew, replay).
	ErrUnauthorized = errors.New("gate-control refused the request's authentication")
	// ErrOverloaded: gate-control's queue is full; try again later.
	ErrOverloaded = errors.New("gate-control is overloaded")
	// ErrUnavailable: gate-control is shutting down, or the request
	// waited too long in its queue.
	ErrUnavailable = errors.New("gate-control is unavailable")
)

// ServerError is an error answer from gate-control. It matches, with
// errors.Is, the error its Code stands for: sandbox.ErrInvalidRole,
// sandbox.ErrInvalidRequest (also for a body too large and a limit over
// the server's cap), sandbox.ErrTimeout,
// sandbox.ErrNotSupported (and it unwraps to the *sandbox.UnsupportedError),
// ErrUnauthorized, ErrOverloaded or ErrUnavailable. Other codes (backend,
// audit, not_found) match none.
type ServerError struct {
	StatusCode int
	Code       gatecontrol.Code
	Message    string
	// AuditID is the spawn ID of the request's audit records, if it got
	// that far.
	AuditID     string
	unsupported *sandbox.UnsupportedError
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("gate-control: %d %s: %s", e.StatusCode, e.Code, e.Message)
}

// Is maps the error's code to the sandbox package's errors and this
// package's. It is the one place that does.
func (e *ServerError) Is(target error) bool {
	switch e.Code {
	case gatecontrol.CodeInvalidRole:
		return target == sandbox.ErrInvalidRole
	case gatecontrol.CodeInvalidRequest, gatecontrol.CodeTooLarge, gatecontrol.CodeLimitExceedsCap:
		return target == sandbox.ErrInvalidRequest
	case gatecontrol.CodeTimeout:
		return target == sandbox.ErrTimeout
	case gatecontrol.CodeNotSupported:
		return target == sandbox.ErrNotSupported
	case gatecontrol.CodeUnauthorized:
		return target == ErrUnauthorized
	case gatecontrol.CodeOverloaded, gatecontrol.CodeRateLimited:
		return target == ErrOverloaded
	case gatecontrol.CodeUnavailable:
		return target == ErrUnavailable
	case gatecontrol.CodeBackend, gatecontrol.CodeAudit, gatecontrol.CodeNotFound, gatecontrol.CodeMethodNotAllowed:
		return false
	default:
		return false
	}
}

// Unwrap returns the *sandbox.UnsupportedError of a not_supported answer,
// and nil otherwise.
func (e *ServerError) Unwrap() error {
	if e.unsupported == nil {
		return nil
	}
	return e.unsupported
}

// responseError decodes an error answer into a *ServerError, and returns
// the partial Result it carries.
func responseError(status int, body []byte) (sandbox.Result, error) {
	var er gatecontrol.ErrorResponse
	if err := strictjson.Unmarshal(body, &er); err != nil || er.Code == "" {
		msg := string(body)
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		return sandbox.Result{}, &ServerError{StatusCode: status, Code: "http_" + gatecontrol.Code(strconv.Itoa(status)), Message: msg}
	}
	se := &ServerError{StatusCode: status, Code: er.Code, Message: er.Message, AuditID: er.AuditID}
	if er.Code == gatecontrol.CodeNotSupported {
		se.unsupported = &sandbox.UnsupportedError{Reason: er.Message}
		if u := er.Unsupported; u != nil {
			se.unsupported = &sandbox.UnsupportedError{Backend: u.Backend, Reason: u.Reason}
		}
	}
	var res sandbox.Result
	if er.Result != nil {
		res = *er.Result
	}
	return res, se
}

// keyStamp identifies a version of the key file.
type keyStamp struct {
	ino, size int64
	mtime     time.Time
}

// signingKey returns the key file's current key, reading the file again
// when it changed since the last read.
func (c *Client) signingKey() (auth.Key, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fi, err := os.Stat(c.keyFile)
	if err != nil {
		return auth.Key{}, fmt.Errorf("reading gate-control key file: %w", err)
	}
	st := keyStamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = int64(sys.Ino)
	}
	if c.key.ID != "" && st == c.stamp {
		return c.key, nil
	}
	// The file exists, so this only reads it; it creates nothing.
	ring, err := auth.LoadOrCreateKeyFile(c.keyFile, c.now)
	if err != nil {
		return auth.Key{}, fmt.Errorf("reading gate-control key file: %w", err)
	}
	c.key, c.stamp = ring.Current(), st
	return c.key, nil
}

// closeBody closes a response body that was read to its end or to the
// limit. An error closing it changes nothing for the caller.
func closeBody(resp *http.Response) { _ = resp.Body.Close() }
