package preciseprefix

import (
	"container/list"
	"sync"
)

// hashCache remembers the block hashes of recently scored prompts (keyed by a hash of the
// model and body), so a request rescheduled or repeated is not tokenized again. It is bounded
// by entries and safe for concurrent use.
type hashCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: newest
	items map[uint64]*list.Element
}

type cached struct {
	key    uint64
	hashes []uint64
}

func newHashCache(max int) *hashCache {
	return &hashCache{max: max, order: list.New(), items: make(map[uint64]*list.Element)}
}

func (c *hashCache) get(k uint64) ([]uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cached).hashes, true
	}
	return nil, false
}

func (c *hashCache) put(k uint64, hashes []uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		e.Value.(*cached).hashes = hashes
		c.order.MoveToFront(e)
		return
	}
	c.items[k] = c.order.PushFront(&cached{key: k, hashes: hashes})
	if c.order.Len() > c.max {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.items, old.Value.(*cached).key)
	}
}
