package fleettest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// VersityGW returns versitygw's path: $CODEGENIE_TOOLS/versitygw (where
// scripts/setup.sh --tests installs it), else versitygw on PATH. It skips
// the test when there is neither.
func VersityGW(tb testing.TB) string {
	tb.Helper()
	tools := os.Getenv("CODEGENIE_TOOLS")
	if tools == "" {
		tools = "/usr/local/lib/codegenie/bin"
	}
	if p := filepath.Join(tools, "versitygw"); isExec(p) {
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	tb.Skipf("versitygw, the tests' S3 server, is not installed in %s or on PATH: run scripts/setup.sh --tests", tools)
	return ""
}

// S3 is a running S3-compatible server: versitygw's gateway over a
// directory (its posix backend, with metadata in a sidecar directory), on
// loopback, with one bucket. It honours conditional writes.
type S3 struct {
	// Endpoint is its URL, http://127.0.0.1:PORT.
	Endpoint string
	// Bucket is the bucket the tests write to.
	Bucket               string
	AccessKey, SecretKey string
	bin, dir, addr       string
	log                  *os.File
	cmd                  *exec.Cmd
	// exited is closed when cmd has exited.
	exited chan struct{}
	// probe is a bucket folder only this server's data holds: the start
	// waits until the server at addr has it, so that it never takes
	// another server for this one (as fleettest.Start does for Temporal).
	probe string
}

// StartS3 starts an S3 server with its data in dir, on a free port, makes
// its bucket, and waits until it answers (StartLimit at most). It is
// stopped when the test ends.
func StartS3(tb testing.TB, dir string) *S3 {
	tb.Helper()
	bin := VersityGW(tb)
	for _, sub := range []string{"data", "meta"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	probe := fmt.Sprintf("probe-%016x", rand.Uint64())
	if err := os.Mkdir(filepath.Join(dir, "data", probe), 0o755); err != nil {
		tb.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "versitygw.log"))
	if err != nil {
		tb.Fatal(err)
	}
	s := &S3{Bucket: "results", AccessKey: "codegenie-test", SecretKey: "codegenie-test-secret",
		bin: bin, dir: dir, log: log, probe: probe}
	tb.Cleanup(func() {
		s.Stop()
		_ = log.Close()
	})
	for attempt := 1; ; attempt++ {
		s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(tb)))
		s.Endpoint = "http://" + s.addr
		if s.start(tb, attempt < 5) {
			break
		}
		fmt.Fprintf(s.log, "--- versitygw exited before it answered on %s; another port ---\n", s.addr)
	}
	c := s.Client()
	if _, err := c.CreateBucket(tb.Context(), &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)}); err != nil {
		tb.Fatalf("making the bucket %s: %v", s.Bucket, err)
	}
	return s
}

// start starts the server and waits until it answers with its own data:
// an anonymous HEAD of the probe bucket is refused (403) by this server,
// and not found (404) by any other. It reports false when the server
// exited first (its port taken) and retry is set; else such an exit fails
// the test.
func (s *S3) start(tb testing.TB, retry bool) bool {
	tb.Helper()
	s.cmd = exec.Command(s.bin, "--port", s.addr, "--quiet", "posix", "--sidecar", filepath.Join(s.dir, "meta"), filepath.Join(s.dir, "data"))
	s.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("starting versitygw: %v", err)
	}
	exited := make(chan struct{})
	s.exited = exited
	cmd := s.cmd
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(StartLimit)
	for {
		if exitedEarly(tb, exited, retry, s.log, "versitygw", s.addr) {
			return false
		}
		resp, err := http.Head(s.Endpoint + "/" + s.probe)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusOK {
				return true
			}
			err = fmt.Errorf("HEAD /%s: %s (another server on the port?)", s.probe, resp.Status)
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(s.log.Name())
			tb.Fatalf("waited %v for versitygw to answer on %s: %v\n%s", StartLimit, s.addr, err, data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// URL is the s3:// URL of prefix in the bucket, as --store takes it.
func (s *S3) URL(prefix string) string {
	q := url.Values{"endpoint": {s.Endpoint}, "region": {"us-east-1"}}
	return fmt.Sprintf("s3://%s/%s?%s", s.Bucket, prefix, q.Encode())
}

// Env is the environment that gives a client the server's credentials.
func (s *S3) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey, "AWS_EC2_METADATA_DISABLED=true"}
}

// SetEnv sets Env in the test's environment (so the test cannot be
// parallel).
func (s *S3) SetEnv(t *testing.T) {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// Client is an S3 client of the server, for a test's own requests.
func (s *S3) Client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(s.Endpoint),
		Region:       "us-east-1",
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s) and waits.
func (s *S3) Stop() {
	if s.cmd == nil || s.cmd.Process == nil || s.exited == nil {
		return
	}
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// Restart stops the server and starts it again on the same port and data.
func (s *S3) Restart(tb testing.TB) {
	tb.Helper()
	s.Stop()
	fmt.Fprintf(s.log, "--- restart ---\n")
	s.start(tb, false)
}
