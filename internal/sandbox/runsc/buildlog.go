package runsc

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds of the output the backend keeps of a build.
const (
	maxLineBytes    = 1024 // a longer line is cut
	stepTailLines   = 60   // npm ends a failure with ~25 lines of usage and notices after its cause
	stepTailBytes   = 4 << 10
	targetTailLines = 80
	targetTailBytes = 8 << 10
)

// tail keeps the last lines of a stream, at most maxLines lines and about
// maxBytes bytes.
type tail struct {
	maxLines, maxBytes int
	lines              []string
	size               int
}

func newTail(lines, bytes int) *tail { return &tail{maxLines: lines, maxBytes: bytes} }

func (t *tail) add(line string) {
	t.lines = append(t.lines, line)
	t.size += len(line) + 1
	for len(t.lines) > t.maxLines || (t.size > t.maxBytes && len(t.lines) > 1) {
		t.size -= len(t.lines[0]) + 1
		t.lines = t.lines[1:]
	}
}

func (t *tail) String() string {
	if len(t.lines) == 0 {
		return ""
	}
	return strings.Join(t.lines, "\n") + "\n"
}

// lineWriter splits what is written to it into lines, cut at maxLineBytes,
// and hands each to fn with the time it was completed. Carriage returns end
// a line too. It is safe for concurrent use; fn is called with its lock held.
type lineWriter struct {
	mu      sync.Mutex
	fn      func(line string, at time.Time)
	now     func() time.Time
	pending []byte
	cut     bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := strings.IndexAny(string(p), "\n\r")
		if i < 0 {
			w.take(p)
			break
		}
		w.take(p[:i])
		w.emit()
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) take(b []byte) {
	room := maxLineBytes - len(w.pending)
	if len(b) > room {
		b = b[:max(room, 0)]
		w.cut = true
	}
	w.pending = append(w.pending, b...)
}

func (w *lineWriter) emit() {
	line := string(w.pending)
	if w.cut {
		line += " [cut]"
	}
	w.pending, w.cut = w.pending[:0], false
	w.fn(line, w.now())
}

// flush hands on a last line that had no newline.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) > 0 || w.cut {
		w.emit()
	}
}

// The lines of buildah bud's output that the backend reads. A build step's
// own output goes to the same stream, so none of them is trusted alone; see
// buildLog.
var (
	// [i/n] STEP k/m: KEYWORD ... ([i/n] only when n > 1 stages are built)
	reHeader = regexp.MustCompile(`^(?:\[(\d{1,4})/(\d{1,4})\] )?STEP (\d{1,5})/(\d{1,5}): ([A-Za-z]+)`)
	reCached = regexp.MustCompile(`^--> Using cache ([0-9a-f]{64})$`)
	reLayer  = regexp.MustCompile(`^--> ([0-9a-f]{11,64})$`)
	reCommit = regexp.MustCompile(`^(?:\[\d{1,4}/\d{1,4}\] )?COMMIT\b`)
	reExit   = regexp.MustCompile(`while running runtime: exit status (\d{1,3})$`)
	// buildah's error when a step fails: Error: building at STEP "...": ...
	reStepErr = regexp.MustCompile(`^Error: building at STEP "`)
)

// step is one instruction that buildah announced.
type step struct {
	stage   int // 0-based index in the Dockerfile
	num     int // buildah's STEP number in the stage: FROM is 1
	keyword string
	// start is when its header was read; end when its layer was
	// committed or reused ("--> ID"), the image commit began, or the next
	// header came, whichever was first.
	start, end time.Time
	// cached: buildah reused a layer (--layers) and ran nothing.
	cached bool
	out    *tail
}

// buildLog follows the output of one buildah bud, line by line: which
// steps ran and when, which were cached, the image each stage reached, and
// the tails of output.
//
// A header is accepted only when it matches the Dockerfile (its stage
// exists, the stage has m instructions and the k-th is the announced
// keyword, the [i/n] prefix is there exactly when several stages are
// built) and comes strictly after the previous accepted header. A step that
// prints headers of its own can therefore at most announce the very next
// step early, which moves a time boundary but never which step is which;
// a forged "Using cache" line makes the count of sandboxes disagree with
// the steps, which attributePhases reports as an incomplete trace.
type buildLog struct {
	stages []stage
	built  int // stages in buildah's list: the target's index + 1
	steps  []*step
	last   *step
	// image is the last image ID line seen in each stage: the layer its
	// last step produced (a short or full ID).
	image   map[int]string
	all     *tail
	runExit int // from buildah's error line; -1 when there is none
	// failedAtStep: buildah said that the last step failed (as opposed
	// to a failure before the first step or while committing).
	failedAtStep bool
	// onStep, when set, sees each accepted header and its line.
	onStep func(st *step, line string)
}

func newBuildLog(stages []stage, target int) *buildLog {
	return &buildLog{
		stages:  stages,
		built:   target + 1,
		image:   map[int]string{},
		all:     newTail(targetTailLines, targetTailBytes),
		runExit: -1,
	}
}

func (l *buildLog) line(s string, at time.Time) {
	l.all.add(s)
	if st := l.header(s); st != nil {
		if l.last != nil && l.last.end.IsZero() {
			l.last.end = at
		}
		st.start = at
		l.steps = append(l.steps, st)
		l.last = st
		if l.onStep != nil {
			l.onStep(st, s)
		}
		return
	}
	if m := reExit.FindStringSubmatch(s); m != nil {
		l.runExit, _ = strconv.Atoi(m[1])
	}
	if reStepErr.MatchString(s) {
		l.failedAtStep = true
	}
	cur := l.last
	if cur == nil {
		return
	}
	if cur.end.IsZero() {
		cur.out.add(s)
	}
	// A step ends when buildah has committed its layer (or reused one),
	// or starts committing the image: what follows is buildah's own work.
	end := true
	if m := reCached.FindStringSubmatch(s); m != nil {
		cur.cached = true
		l.image[cur.stage] = m[1]
	} else if m := reLayer.FindStringSubmatch(s); m != nil {
		l.image[cur.stage] = m[1]
	} else {
		end = reCommit.MatchString(s)
	}
	if end && cur.end.IsZero() {
		cur.end = at
	}
}

// header returns the step that s announces, or nil when s is not a valid
// next header.
func (l *buildLog) header(s string) *step {
	m := reHeader.FindStringSubmatch(s)
	if m == nil {
		return nil
	}
	idx := 0
	if m[1] != "" {
		i, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		if n != l.built || n < 2 || i < 1 || i > n {
			return nil
		}
		idx = i - 1
	} else if l.built != 1 {
		return nil
	}
	if idx >= len(l.stages) {
		return nil
	}
	k, _ := strconv.Atoi(m[3])
	total, _ := strconv.Atoi(m[4])
	st := l.stages[idx]
	if total != len(st.instrs) || k < 1 || k > total || !strings.EqualFold(m[5], st.instrs[k-1].keyword) {
		return nil
	}
	if p := l.last; p != nil && (idx < p.stage || idx == p.stage && k <= p.num) {
		return nil
	}
	return &step{stage: idx, num: k, keyword: st.instrs[k-1].keyword, out: newTail(stepTailLines, stepTailBytes)}
}

// finish closes the last step at the end of the output.
func (l *buildLog) finish(at time.Time) {
	if l.last != nil && l.last.end.IsZero() {
		l.last.end = at
	}
}

// ran returns the RUN steps that ran a sandbox, in order.
func (l *buildLog) ran() []*step {
	var out []*step
	for _, s := range l.steps {
		if s.keyword == "RUN" && !s.cached {
			out = append(out, s)
		}
	}
	return out
}
