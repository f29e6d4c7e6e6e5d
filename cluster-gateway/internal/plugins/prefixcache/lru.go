package prefixcache

// podLRU is one endpoint's recency-ordered set of block hashes, bounded by cap. Nodes live in a
// slice linked by index, so inserts and evictions do not allocate once the slice has grown.
// It is guarded by the index's mutex.
type podLRU struct {
	id         int32
	cap        int // current capacity (shrinks when observed cache hits fall short)
	maxCap     int // configured capacity; growth stops here
	pos        map[uint64]int32
	nodes      []lruNode
	free       []int32
	head, tail int32 // head is the most recent; -1 when empty
}

type lruNode struct {
	hash       uint64
	prev, next int32
}

func newPodLRU(id int32, capacity int) *podLRU {
	return &podLRU{id: id, cap: capacity, maxCap: capacity, pos: make(map[uint64]int32), head: -1, tail: -1}
}

func (l *podLRU) len() int { return len(l.pos) }

func (l *podLRU) has(h uint64) bool {
	_, ok := l.pos[h]
	return ok
}

// touch makes h the most recent entry, inserting it if absent. It reports whether h is new and,
// when the insert pushed the set over capacity, the evicted hash.
func (l *podLRU) touch(h uint64) (added bool, evicted uint64, didEvict bool) {
	if i, ok := l.pos[h]; ok {
		l.unlink(i)
		l.pushFront(i)
		return false, 0, false
	}
	if l.cap <= 0 {
		return false, 0, false
	}
	if len(l.pos) >= l.cap {
		evicted, didEvict = l.evictOldest()
	}
	i := l.alloc(h)
	l.pos[h] = i
	l.pushFront(i)
	return true, evicted, didEvict
}

func (l *podLRU) alloc(h uint64) int32 {
	if n := len(l.free); n > 0 {
		i := l.free[n-1]
		l.free = l.free[:n-1]
		l.nodes[i] = lruNode{hash: h, prev: -1, next: -1}
		return i
	}
	l.nodes = append(l.nodes, lruNode{hash: h, prev: -1, next: -1})
	return int32(len(l.nodes) - 1)
}

func (l *podLRU) evictOldest() (uint64, bool) {
	if l.tail < 0 {
		return 0, false
	}
	i := l.tail
	h := l.nodes[i].hash
	l.unlink(i)
	delete(l.pos, h)
	l.free = append(l.free, i)
	return h, true
}

func (l *podLRU) unlink(i int32) {
	n := &l.nodes[i]
	if n.prev >= 0 {
		l.nodes[n.prev].next = n.next
	} else {
		l.head = n.next
	}
	if n.next >= 0 {
		l.nodes[n.next].prev = n.prev
	} else {
		l.tail = n.prev
	}
	n.prev, n.next = -1, -1
}

func (l *podLRU) pushFront(i int32) {
	l.nodes[i].next = l.head
	l.nodes[i].prev = -1
	if l.head >= 0 {
		l.nodes[l.head].prev = i
	}
	l.head = i
	if l.tail < 0 {
		l.tail = i
	}
}
