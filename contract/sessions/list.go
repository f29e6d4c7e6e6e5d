package sessions

// update renews entry i, now served by value, and returns the value that served it before
// ("" when it had expired).
func (t *Table) update(i int32, value string, nowNs int64) (prev string) {
	n := &t.nodes[i]
	if n.expires > nowNs {
		prev = n.value
	}
	if n.value != value {
		t.unlinkValue(i)
		t.bytes += int64(len(value)) - int64(len(n.value))
		n.value = value
		t.linkValue(i)
	}
	n.expires = nowNs + int64(t.cfg.TTL)
	t.unlink(i)
	t.pushFront(i)
	t.shrink(nowNs, i)
	return prev
}

// shrink evicts the least recently used entries other than keep while the table is over its
// byte bound (a session moved to a longer value).
func (t *Table) shrink(nowNs int64, keep int32) {
	t.expire(nowNs)
	for t.bytes > t.cfg.MaxBytes && t.tail >= 0 && t.tail != keep {
		t.remove(t.tail, &t.evicted.Capacity)
	}
}

// expire drops the expired entries at the old end of the recency list. Every entry lives TTL
// from its last record and the list is in record order, so they are all there.
func (t *Table) expire(nowNs int64) {
	for t.tail >= 0 && t.nodes[t.tail].expires <= nowNs {
		t.remove(t.tail, &t.evicted.Expired)
	}
}

// RemoveValue drops every session of value. It needs Config.IndexValues (without it, it does
// nothing).
func (t *Table) RemoveValue(value string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byValue == nil {
		return
	}
	for i, ok := t.byValue[value]; ok; i, ok = t.byValue[value] {
		t.remove(i, &t.evicted.Removed)
	}
}

// Size returns the number of sessions held and the bytes they are charged.
func (t *Table) Size() (entries int, bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pos), t.bytes
}

// Evictions returns the entries dropped so far, by reason.
func (t *Table) Evictions() Evictions {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.evicted
}

// remove drops entry i, counting it in why.
func (t *Table) remove(i int32, why *uint64) {
	n := &t.nodes[i]
	t.unlink(i)
	t.unlinkValue(i)
	delete(t.pos, n.key)
	t.bytes -= t.entry + int64(len(n.value))
	*why++
	*n = node{}
	t.free = append(t.free, i)
}

func (t *Table) alloc(n node) int32 {
	if k := len(t.free); k > 0 {
		i := t.free[k-1]
		t.free = t.free[:k-1]
		t.nodes[i] = n
		return i
	}
	t.nodes = append(t.nodes, n)
	return int32(len(t.nodes) - 1)
}

func (t *Table) unlink(i int32) {
	n := &t.nodes[i]
	if n.prev >= 0 {
		t.nodes[n.prev].next = n.next
	} else {
		t.head = n.next
	}
	if n.next >= 0 {
		t.nodes[n.next].prev = n.prev
	} else {
		t.tail = n.prev
	}
	n.prev, n.next = -1, -1
}

func (t *Table) pushFront(i int32) {
	t.nodes[i].prev, t.nodes[i].next = -1, t.head
	if t.head >= 0 {
		t.nodes[t.head].prev = i
	}
	t.head = i
	if t.tail < 0 {
		t.tail = i
	}
}

// linkValue puts i at the front of its value's list (IndexValues).
func (t *Table) linkValue(i int32) {
	if t.byValue == nil {
		return
	}
	n := &t.nodes[i]
	n.vprev, n.vnext = -1, -1
	if first, ok := t.byValue[n.value]; ok {
		n.vnext = first
		t.nodes[first].vprev = i
	}
	t.byValue[n.value] = i
}

// unlinkValue takes i out of its value's list, deleting the list when it empties.
func (t *Table) unlinkValue(i int32) {
	if t.byValue == nil {
		return
	}
	n := &t.nodes[i]
	if n.vnext >= 0 {
		t.nodes[n.vnext].vprev = n.vprev
	}
	switch {
	case n.vprev >= 0:
		t.nodes[n.vprev].vnext = n.vnext
	case n.vnext >= 0:
		t.byValue[n.value] = n.vnext
	default:
		delete(t.byValue, n.value)
	}
	n.vprev, n.vnext = -1, -1
}
