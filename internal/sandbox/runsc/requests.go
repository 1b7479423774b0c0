package runsc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
)

// Requests during the boot window. Some shells run only when a request
// arrives (a handler that runs sh -c git ..., a health route). With a
// trace, once the boot has started, the backend sends requests from inside
// the sandbox, over its loopback: GET / and the path of the HEALTHCHECK's
// URL (http://localhost:PORT/PATH or 127.0.0.1) and BuildSpec.ProbePaths,
// one after the other. The
// client is the image's own node (on its PATH, or /nodejs/bin/node), run
// with runsc exec and a short script of ours: it waits until a port of the
// image's EXPOSE (or the HEALTHCHECK URL's, or, with neither, any port)
// listens in the sandbox's /proc/net/tcp, then sends each request and
// prints when it started and ended. Each request is a phase,
// "request:<path>", ExitCode 0 when the service answered (its status in
// the output), Failed when it did not; the events of the service's
// processes between its start and end are given that phase. The client's
// own processes are the backend's, not the image's: they get the first
// request's phase, and its node has no exec event (gVisor reports none for
// runsc exec, and the workload did not run it). An image without node, or
// a service that never listens, gets no request phases.

// requestScript is the client: argv[1] is a JSON requestPlan; it prints a
// JSON line per request, or {"noport":true}.
const requestScript = `const fs=require('fs'),http=require('http');
const plan=JSON.parse(process.argv[1]);const until=Date.now()+plan.wait_ms;
function listening(){const ports=[];for(const f of ['/proc/net/tcp','/proc/net/tcp6']){try{for(const l of fs.readFileSync(f,'utf8').split('\n').slice(1)){const c=l.trim().split(/\s+/);if(c[3]==='0A'){ports.push(parseInt(c[1].split(':').pop(),16));}}}catch(e){}}return ports;}
(async()=>{let port;while(Date.now()<until){const l=listening();port=plan.ports.length?plan.ports.find(p=>l.includes(p)):l[0];if(port)break;await new Promise(r=>setTimeout(r,100));}
if(!port){console.log(JSON.stringify({noport:true}));return;}
for(const p of plan.paths){const start=Date.now();const a=await new Promise(res=>{const q=http.get({host:'127.0.0.1',port,path:p,timeout:plan.timeout_ms},r=>{const h=require('crypto').createHash('sha256');r.on('data',d=>h.update(d));r.on('end',()=>res({status:r.statusCode,type:String(r.headers['content-type']||''),sha256:h.digest('hex')}));});q.on('error',()=>res({status:0}));q.on('timeout',()=>{q.destroy();res({status:0});});});
console.log(JSON.stringify({path:p,port,start,end:Date.now(),...a}));}})();`

// requestPlan is what the client does.
type requestPlan struct {
	Ports     []int    `json:"ports"`
	Paths     []string `json:"paths"`
	WaitMS    int64    `json:"wait_ms"`
	TimeoutMS int64    `json:"timeout_ms"`
}

// requestRun is the requests of one boot.
type requestRun struct {
	plan requestPlan
	node lookup
	// pid is the client's PID inside the sandbox; 0 when it did not run.
	pid  int32
	done []doneRequest
}

// doneRequest is one request the client made.
type doneRequest struct {
	Path   string `json:"path"`
	Port   int    `json:"port"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
	Status int    `json:"status"`
	Type   string `json:"type,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// reURL finds a loopback URL in a healthcheck command.
var reURL = regexp.MustCompile(`https?://(?:localhost|127\.0\.0\.1)(?::(\d{1,5}))?(/[^\s'"]*)?`)

// planRequests is the requests for an image: GET /, the HEALTHCHECK
// URL's path and the request's probe paths (validated by
// SpawnRequest.Validate), each once, on its exposed ports and the URL's.
func planRequests(cfg imageConfig, probePaths []string) requestPlan {
	p := requestPlan{Paths: []string{"/"}}
	seen := map[int]bool{}
	for spec := range cfg.ExposedPorts {
		port, proto, _ := strings.Cut(spec, "/")
		if n, err := strconv.Atoi(port); err == nil && n > 0 && n < 65536 && (proto == "" || proto == "tcp") && !seen[n] {
			seen[n] = true
			p.Ports = append(p.Ports, n)
		}
	}
	if m := reURL.FindStringSubmatch(strings.Join(cfg.Healthcheck, " ")); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 && n < 65536 && !seen[n] {
			p.Ports = append(p.Ports, n)
		}
		if u, err := url.Parse(m[0]); err == nil && u.Path != "" && u.Path != "/" {
			p.Paths = append(p.Paths, u.EscapedPath())
		}
	}
	for _, path := range probePaths {
		if !slices.Contains(p.Paths, path) {
			p.Paths = append(p.Paths, path)
		}
	}
	sort.Ints(p.Ports)
	return p
}

// nodeFor finds the image's node for the client.
func nodeFor(view fsView, env []string, cwd string) lookup {
	if lk := view.lookPath("node", env, cwd); lk.state == lookupFound {
		return lk
	}
	return view.lookPath("/nodejs/bin/node", env, cwd)
}

// runRequests sends rr's requests from inside container id, waiting at most
// wait for the service to listen, and records what came back.
func (b *Backend) runRequests(ctx context.Context, sp *spawnDir, id string, c container, rr *requestRun, wait time.Duration) {
	rr.plan.WaitMS = wait.Milliseconds()
	rr.plan.TimeoutMS = 2000
	plan, err := json.Marshal(rr.plan)
	if err != nil {
		return
	}
	pidFile := filepath.Join(sp.dir, "requests.pid")
	args := b.globalFlags(sp.root(), false, c.upper)
	args = append(args, "exec", "--internal-pid-file="+pidFile,
		fmt.Sprintf("--user=%d:%d", c.spec.user.UID, c.spec.user.GID), "--cwd=/", id,
		rr.node.execfn, "-e", requestScript, string(plan))
	out := newBoundedBuffer(64 << 10)
	cmd := exec.CommandContext(ctx, b.cfg.Runsc, args...)
	cmd.Env = runscEnv
	cmd.Stdout = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	intoCgroup(cmd, sp.cgroup)
	cmd.WaitDelay = time.Second
	_ = cmd.Run() // what it printed is the answer; a killed client printed less
	if pb, err := os.ReadFile(pidFile); err == nil {
		if v, err := strconv.ParseInt(strings.TrimSpace(string(pb)), 10, 32); err == nil && v > 0 {
			rr.pid = int32(v)
		}
	}
	o, _ := out.result()
	sc := bufio.NewScanner(bytes.NewReader(o))
	for sc.Scan() {
		var d doneRequest
		if json.Unmarshal(sc.Bytes(), &d) != nil || d.Path == "" || len(rr.done) >= len(rr.plan.Paths) {
			continue
		}
		rr.done = append(rr.done, d)
	}
}

// phases are the request phases.
func (rr *requestRun) phases() []sandbox.PhaseResult {
	var out []sandbox.PhaseResult
	for _, d := range rr.done {
		p := sandbox.PhaseResult{Name: requestPhase(d.Path), Duration: time.Duration(d.End-d.Start) * time.Millisecond,
			OutputTail: fmt.Sprintf("GET %s on port %d: %s\n", d.Path, d.Port, statusText(d.Status))}
		if d.Status == 0 {
			p.Failed, p.ExitCode = true, 1
		} else {
			p.Response = &sandbox.Response{Status: d.Status, ContentType: d.Type, BodySHA256: d.SHA256}
		}
		out = append(out, p)
	}
	return out
}

func statusText(s int) string {
	if s == 0 {
		return "no answer"
	}
	return strconv.Itoa(s)
}

// requestPhase is the phase of a request to path.
func requestPhase(path string) string { return "request:" + path }

// attributeRequests gives the boot's events during each request its phase,
// and the client's own processes the first request's.
func attributeRequests(events []trace.Event, bootID string, rr *requestRun) {
	if rr == nil || len(rr.done) == 0 {
		return
	}
	client := map[int32]bool{}
	if rr.pid != 0 {
		client[rr.pid] = true
	}
	for i := range events {
		e := &events[i]
		if e.Container != bootID || e.Phase != sandbox.PhaseBoot {
			continue
		}
		if rr.pid != 0 && (client[e.PID] || (e.PPID != 0 && client[e.PPID])) {
			client[e.PID] = true
			if e.Kind == trace.KindClone && e.ChildPID != 0 {
				client[e.ChildPID] = true
			}
			e.Phase = requestPhase(rr.done[0].Path)
			continue
		}
		ms := e.Time.UnixMilli()
		for _, d := range rr.done {
			// The service's clock is the sandbox's, the same as the
			// events'; a little slack for the end.
			if ms >= d.Start && ms <= d.End+20 {
				e.Phase = requestPhase(d.Path)
				break
			}
		}
	}
}

// exercise runs the request client once the container can take a runsc
// exec (it may not exist yet when the boot has just started), leaving
// time for the healthcheck.
func (b *Backend) exercise(ctx context.Context, sp *spawnDir, id string, c container, rr *requestRun, window time.Duration, since time.Time) {
	for try := 0; try < 8 && ctx.Err() == nil; try++ {
		wait := window - time.Since(since) - 2*time.Second
		if wait <= 0 {
			return
		}
		b.runRequests(ctx, sp, id, c, rr, wait)
		if rr.pid != 0 || len(rr.done) > 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}
