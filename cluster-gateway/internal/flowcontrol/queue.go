package flowcontrol

import (
	"cmp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// item is one queued request. Its done channel (buffered) receives exactly one outcome.
type item struct {
	req       *framework.Request
	sizeGauge prometheus.Gauge // the queue-size series counting it
	enqueued  time.Time
	deadline  time.Time
	seq       uint64
	done      chan outcome
	removed   bool
}

type outcome struct {
	res *framework.Result
	err error
}

// tenantQueue is one tenant's FIFO inside a band.
type tenantQueue struct {
	name  string
	items []*item
}

// band is one priority level: tenants served round-robin.
type band struct {
	priority int
	tenants  []*tenantQueue
	next     int // round-robin cursor into tenants
	size     int
}

// queue is the set of bands, highest priority first. It is guarded by the Controller's mutex.
type queue struct {
	bands []*band
	size  int
	seq   uint64
}

func (q *queue) band(priority int) *band {
	i, found := slices.BinarySearchFunc(q.bands, priority, func(b *band, p int) int { return cmp.Compare(p, b.priority) })
	if found {
		return q.bands[i]
	}
	b := &band{priority: priority}
	q.bands = slices.Insert(q.bands, i, b)
	return b
}

func (q *queue) push(it *item) {
	q.seq++
	it.seq = q.seq
	b := q.band(it.req.Priority)
	var tq *tenantQueue
	for _, t := range b.tenants {
		if t.name == it.req.Tenant {
			tq = t
			break
		}
	}
	if tq == nil {
		tq = &tenantQueue{name: it.req.Tenant}
		b.tenants = append(b.tenants, tq)
	}
	tq.items = append(tq.items, it)
	b.size++
	q.size++
}

// remove takes it out of the queue; it reports false when it was not queued.
func (q *queue) remove(it *item) bool {
	if it.removed {
		return false
	}
	b := q.band(it.req.Priority)
	for ti, t := range b.tenants {
		if i := slices.Index(t.items, it); i >= 0 {
			t.items = slices.Delete(t.items, i, i+1)
			if len(t.items) == 0 {
				b.dropTenant(ti)
			}
			it.removed = true
			b.size--
			q.size--
			q.pruneBand(b)
			return true
		}
	}
	return false
}

// dropTenant removes tenant ti, keeping the round-robin cursor on the same next tenant.
func (b *band) dropTenant(ti int) {
	b.tenants = slices.Delete(b.tenants, ti, ti+1)
	if ti < b.next {
		b.next--
	}
	if b.next >= len(b.tenants) {
		b.next = 0
	}
}

func (q *queue) pruneBand(b *band) {
	if b.size > 0 {
		return
	}
	if i := slices.Index(q.bands, b); i >= 0 {
		q.bands = slices.Delete(q.bands, i, i+1)
	}
}

// victim returns the item to evict to make room for a request of the given priority: the newest
// item of the lowest band whose priority is below it, or nil.
func (q *queue) victim(priority int) *item {
	if len(q.bands) == 0 {
		return nil
	}
	low := q.bands[len(q.bands)-1]
	if low.priority >= priority {
		return nil
	}
	var newest *item
	for _, t := range low.tenants {
		if last := t.items[len(t.items)-1]; newest == nil || last.seq > newest.seq {
			newest = last
		}
	}
	return newest
}

// expired returns the items whose deadline is at or before now.
func (q *queue) expired(now time.Time) []*item {
	var out []*item
	for _, b := range q.bands {
		for _, t := range b.tenants {
			for _, it := range t.items {
				if !now.Before(it.deadline) {
					out = append(out, it)
				}
			}
		}
	}
	return out
}

// count returns how many queued requests in the bands of priority minPriority and above match.
func (q *queue) count(minPriority int, match func(*framework.Request) bool) int {
	n := 0
	for _, b := range q.bands {
		if b.priority < minPriority {
			break // bands are highest first
		}
		for _, t := range b.tenants {
			for _, it := range t.items {
				if !it.removed && match(it.req) {
					n++
				}
			}
		}
	}
	return n
}
