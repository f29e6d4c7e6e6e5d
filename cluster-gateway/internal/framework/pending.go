package framework

import "sync"

// PendingMap remembers a value per routed request between PreRequest and PostResponse. It keeps
// two generations of at most Limit entries, so values of requests whose response never arrives
// are forgotten and memory stays bounded. The zero value is not usable; use NewPendingMap. It is
// safe for concurrent use.
type PendingMap[V any] struct {
	mu        sync.Mutex
	limit     int
	cur, prev map[*Request]V
}

// NewPendingMap returns a map holding up to 2*limit entries.
func NewPendingMap[V any](limit int) *PendingMap[V] {
	return &PendingMap[V]{limit: max(1, limit), cur: make(map[*Request]V), prev: make(map[*Request]V)}
}

// Put stores v for req.
func (p *PendingMap[V]) Put(req *Request, v V) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.cur) >= p.limit {
		p.prev, p.cur = p.cur, p.prev
		clear(p.cur)
	}
	p.cur[req] = v
}

// Take removes and returns the value stored for req.
func (p *PendingMap[V]) Take(req *Request) (V, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.cur[req]; ok {
		delete(p.cur, req)
		return v, true
	}
	v, ok := p.prev[req]
	delete(p.prev, req)
	return v, ok
}

// Len is the number of remembered requests.
func (p *PendingMap[V]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.cur) + len(p.prev)
}
