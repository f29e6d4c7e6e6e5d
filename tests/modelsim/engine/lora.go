package engine

// loraSlots tracks which adapters are resident in the engine's max_loras slots, and how many
// running and waiting sequences use each adapter. An adapter with running sequences cannot be
// evicted. Not safe for concurrent use: the engine's lock guards it.
type loraSlots struct {
	max      int
	resident []string // least recently used first
	running  map[string]int
	waiting  map[string]int
	loads    uint64
}

func newLoRASlots(maxLoras int) *loraSlots {
	return &loraSlots{max: maxLoras, running: map[string]int{}, waiting: map[string]int{}}
}

func (l *loraSlots) isResident(name string) int {
	for i, r := range l.resident {
		if r == name {
			return i
		}
	}
	return -1
}

// victim returns the index of the least recently used resident adapter that no running sequence
// uses, or -1.
func (l *loraSlots) victim() int {
	for i, r := range l.resident {
		if l.running[r] == 0 {
			return i
		}
	}
	return -1
}

// canRun reports whether a sequence of adapter name could start now (resident, a free slot, or an
// evictable adapter).
func (l *loraSlots) canRun(name string) bool {
	if name == "" || l.isResident(name) >= 0 {
		return true
	}
	return l.max > 0 && (len(l.resident) < l.max || l.victim() >= 0)
}

// start marks one more running sequence of adapter name, making it resident (most recently used)
// and evicting an idle adapter if needed. It reports whether the adapter had to be loaded.
// The caller checked canRun.
func (l *loraSlots) start(name string) (loaded bool) {
	if name == "" {
		return false
	}
	if i := l.isResident(name); i >= 0 {
		l.resident = append(l.resident[:i], l.resident[i+1:]...)
	} else {
		loaded = true
		l.loads++
		if len(l.resident) >= l.max {
			v := l.victim()
			l.resident = append(l.resident[:v], l.resident[v+1:]...)
		}
	}
	l.resident = append(l.resident, name)
	l.running[name]++
	return loaded
}

// stop marks one running sequence of adapter name as no longer running.
func (l *loraSlots) stop(name string) {
	if name == "" {
		return
	}
	if l.running[name]--; l.running[name] <= 0 {
		delete(l.running, name)
	}
}

func (l *loraSlots) addWaiting(name string, delta int) {
	if name == "" {
		return
	}
	if l.waiting[name] += delta; l.waiting[name] <= 0 {
		delete(l.waiting, name)
	}
}
