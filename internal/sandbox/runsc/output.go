package runsc

import "sync"

// boundedBuffer keeps the first limit bytes written to it and counts the
// rest. Writes never fail, so the sandbox is not blocked or broken by a full
// buffer. It is safe for concurrent use.
type boundedBuffer struct {
	mu        sync.Mutex
	limit     int
	buf       []byte
	truncated bool
}

func newBoundedBuffer(limit int64) *boundedBuffer {
	return &boundedBuffer{limit: int(min(limit, int64(maxInt)))}
}

const maxInt = int(^uint(0) >> 1)

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.limit - len(b.buf)
	if len(p) > room {
		b.buf = append(b.buf, p[:max(room, 0)]...)
		b.truncated = true
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// result returns a copy of the kept bytes and whether any were dropped.
func (b *boundedBuffer) result() ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) == 0 {
		return nil, b.truncated
	}
	return append([]byte(nil), b.buf...), b.truncated
}
