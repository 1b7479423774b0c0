package runsc

import (
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
	"sync"
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

// requestScript is the client: argv[1] is a JSON requestPlan; it prints
// {"listen":PORT,"at":MS} when the service listens, then a JSON line per
// request, or {"noport":true} when it never listened before its deadline.
const requestScript = `const fs=require('fs'),http=require('http');
const plan=JSON.parse(process.argv[1]);plan.ports=plan.ports||[];plan.paths=plan.paths||[];const until=Date.now()+plan.wait_ms;
function listening(){const ports=[];for(const f of ['/proc/net/tcp','/proc/net/tcp6']){try{for(const l of fs.readFileSync(f,'utf8').split('\n').slice(1)){const c=l.trim().split(/\s+/);if(c[3]==='0A'){ports.push(parseInt(c[1].split(':').pop(),16));}}}catch(e){}}return ports;}
function connects(p){return new Promise(r=>{const s=require('net').connect({host:'127.0.0.1',port:p});const t=setTimeout(()=>{s.destroy();r(false);},500);s.on('connect',()=>{clearTimeout(t);s.destroy();r(true);});s.on('error',()=>{clearTimeout(t);r(false);});});}
(async()=>{let port;while(Date.now()<until){const l=listening();port=plan.ports.length?plan.ports.find(p=>l.includes(p)):l[0];if(!port&&plan.connect){for(const p of plan.ports){if(await connects(p)){port=p;break;}}}if(port)break;await new Promise(r=>setTimeout(r,100));}
if(!port){console.log(JSON.stringify({noport:true}));return;}
console.log(JSON.stringify({listen:port,at:Date.now()}));
for(const p of plan.paths){const start=Date.now();const a=await new Promise(res=>{const q=http.get({host:'127.0.0.1',port,path:p,timeout:Math.max(Math.min(plan.timeout_ms,until-Date.now()),1000)},r=>{const c=require('crypto'),h=c.createHash('sha256');let bs=[],n=0;r.on('data',d=>{h.update(d);n+=d.length;if(n<=plan.shape_max)bs.push(d);else bs=null;});r.on('end',()=>{let shape;if(bs){const gen=t=>(/[0-9]/.test(t)&&/[A-Za-z]/.test(t))||(t.length>=16&&/[a-z]/.test(t)&&/[A-Z]/.test(t));shape=c.createHash('sha256').update(Buffer.concat(bs).toString('latin1').replace(/[A-Za-z0-9_-]{8,}/g,t=>gen(t)?'\0':t).replace(/[0-9]+/g,'\0'),'latin1').digest('hex');}res({status:r.statusCode,type:String(r.headers['content-type']||''),sha256:h.digest('hex'),shape});});});q.on('error',()=>res({status:0}));q.on('timeout',()=>{q.destroy();res({status:0});});});
console.log(JSON.stringify({path:p,port,start,end:Date.now(),...a}));}})();`

// requestPlan is what the client does.
type requestPlan struct {
	Ports []int `json:"ports"`
	// Connect finds the port listening by connecting to it, as well as
	// in /proc/net/tcp: a boot on the host network stack (its egress
	// namespace) lists its sockets there no more.
	Connect   bool     `json:"connect,omitempty"`
	Paths     []string `json:"paths"`
	WaitMS    int64    `json:"wait_ms"`
	TimeoutMS int64    `json:"timeout_ms"`
	// ShapeMax is the largest body whose shape the client hashes.
	ShapeMax int64 `json:"shape_max"`
}

// shapeMax bounds the body the client holds to hash its shape: a page, not
// a download.
const shapeMax = 4 << 20

// requestRun is the requests of one boot.
type requestRun struct {
	plan requestPlan
	node lookup
	// pid is the client's PID inside the sandbox; 0 when it did not run.
	pid  int32
	done []doneRequest

	mu sync.Mutex
	// port and at are the port the service listened on and when (Unix
	// ms, the sandbox's clock), as the client printed them; 0 before.
	port int
	at   int64
}

// listenedAt is the port the service listened on and when (Unix ms); 0
// when it has not (yet), or rr is nil.
func (rr *requestRun) listenedAt() (int, int64) {
	if rr == nil {
		return 0, 0
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.port, rr.at
}

// listened reports whether the service has listened.
func (rr *requestRun) listened() bool {
	port, _ := rr.listenedAt()
	return port != 0
}

// line takes one line the client printed.
func (rr *requestRun) line(b []byte) {
	var l struct {
		doneRequest
		Listen int   `json:"listen"`
		At     int64 `json:"at"`
	}
	if json.Unmarshal(b, &l) != nil {
		return
	}
	if l.Listen > 0 && l.Listen < 65536 {
		rr.mu.Lock()
		if rr.port == 0 {
			rr.port, rr.at = l.Listen, l.At
		}
		rr.mu.Unlock()
		return
	}
	if l.Path == "" || len(rr.done) >= len(rr.plan.Paths) {
		return
	}
	rr.done = append(rr.done, l.doneRequest)
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
	Shape  string `json:"shape,omitempty"`
}

// reURL finds a loopback URL in a healthcheck command.
var reURL = regexp.MustCompile(`https?://(?:localhost|127\.0\.0\.1)(?::(\d{1,5}))?(/[^\s'"]*)?`)

// planRequests is the requests for an image: GET /, the HEALTHCHECK
// URL's path and the request's probe paths (validated by
// SpawnRequest.Validate), each once, on its exposed ports and the URL's.
func planRequests(cfg imageConfig, probePaths []string) requestPlan {
	// Ports is [] rather than null with no port: the client reads its
	// length (a null made it throw at once, so a service with no EXPOSE
	// was never found listening, and its boot ran to the no-port minimum
	// with no request sent).
	p := requestPlan{Paths: []string{"/"}, Ports: []int{}}
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

// requestTimeout bounds one request: a service that has listened but
// does not answer within it has not answered.
const requestTimeout = 20 * time.Second

// runRequests sends rr's requests from inside container id, waiting until
// deadline at most for the service to listen, and records what came back
// as the client prints it.
func (b *Backend) runRequests(ctx context.Context, sp *spawnDir, id string, c container, rr *requestRun, deadline time.Time) {
	rr.plan.WaitMS = time.Until(deadline).Milliseconds()
	rr.plan.TimeoutMS = requestTimeout.Milliseconds()
	rr.plan.ShapeMax = shapeMax
	plan, err := json.Marshal(rr.plan)
	if err != nil {
		return
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	pidFile := filepath.Join(sp.dir, "requests.pid")
	args := b.globalFlags(sp.root(), false, c.upper)
	args = append(args, "exec", "--internal-pid-file="+pidFile,
		fmt.Sprintf("--user=%d:%d", c.spec.user.UID, c.spec.user.GID), "--cwd=/", id,
		rr.node.execfn, "-e", requestScript, string(plan))
	cmd := exec.CommandContext(ctx, b.cfg.Runsc, args...)
	cmd.Env = runscEnv
	// Lines are cut at maxLineBytes, and rr.line keeps no more than the
	// plan asks for.
	cmd.Stdout = &lineWriter{fn: func(line string, _ time.Time) { rr.line([]byte(line)) }, now: time.Now}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	intoCgroup(cmd, sp.cgroup)
	cmd.WaitDelay = time.Second
	_ = cmd.Run() // what it printed is the answer; a killed client printed less
	if pb, err := os.ReadFile(pidFile); err == nil {
		if v, err := strconv.ParseInt(strings.TrimSpace(string(pb)), 10, 32); err == nil && v > 0 {
			rr.pid = int32(v)
		}
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
			p.Response = &sandbox.Response{Status: d.Status, ContentType: d.Type, BodySHA256: d.SHA256, ShapeSHA256: d.Shape}
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
// exec (it may not exist yet when the boot has just started), until
// deadline at the latest.
func (b *Backend) exercise(ctx context.Context, sp *spawnDir, id string, c container, rr *requestRun, deadline time.Time) {
	// A margin for runsc exec itself, so that the client reports before
	// the boot's maximum.
	deadline = deadline.Add(-time.Second)
	for ctx.Err() == nil && time.Until(deadline) > 0 {
		b.runRequests(ctx, sp, id, c, rr, deadline)
		if rr.pid != 0 || len(rr.done) > 0 || rr.listened() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}
