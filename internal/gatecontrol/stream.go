package gatecontrol

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// streamQueue bounds the progress frames waiting to be written. Progress
// is best-effort: past it, frames are dropped rather than slowing the
// backend; the outcome is never dropped.
const streamQueue = 256

// streamWriter writes a SpawnStreamPath answer: progress frames from the
// backend's goroutines, in the order they arrive, from one writer
// goroutine, then the outcome.
type streamWriter struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	ch   chan sandbox.Progress
	done chan struct{}

	mu     sync.Mutex
	closed bool
}

// startStream sends the 200 and starts the writer.
func startStream(w http.ResponseWriter) *streamWriter {
	sw := &streamWriter{w: w, rc: http.NewResponseController(w), ch: make(chan sandbox.Progress, streamQueue), done: make(chan struct{})}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	_ = sw.rc.Flush()
	go func() {
		defer close(sw.done)
		for p := range sw.ch {
			sw.write(StreamFrame{Progress: &p})
		}
	}()
	return sw
}

// progress queues p; it is the spawn's sandbox.ProgressFunc. Reports
// after finish, or past the queue, are dropped.
func (sw *streamWriter) progress(p sandbox.Progress) {
	p.Source = "" // the caller's to set
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.closed {
		return
	}
	select {
	case sw.ch <- p:
	default:
	}
}

// finish writes the queued progress, then the outcome: the Result, or the
// ErrorResponse (with its partial Result) and status SpawnPath would have
// answered.
func (sw *streamWriter) finish(res sandbox.Result, err error, auditID string) {
	sw.mu.Lock()
	sw.closed = true
	close(sw.ch)
	sw.mu.Unlock()
	<-sw.done
	if err == nil {
		sw.write(StreamFrame{Result: &res})
		return
	}
	status, resp := errorResponse(err)
	resp.AuditID = auditID
	if !emptyResult(res) {
		resp.Result = &res
	}
	sw.write(StreamFrame{Error: &resp, Status: status})
}

// write sends one frame and flushes it. A failed write means the client is
// gone; the spawn's context ends with the request's.
func (sw *streamWriter) write(f StreamFrame) {
	b, err := json.Marshal(f)
	if err != nil {
		b, _ = json.Marshal(StreamFrame{Error: &ErrorResponse{Code: CodeBackend, Message: "encoding response: " + err.Error()}, Status: http.StatusInternalServerError})
	}
	_, _ = sw.w.Write(append(b, '\n'))
	_ = sw.rc.Flush()
}
