package routing

import "time"

// MaxPrompts is how many requests a Prompts list holds.
const MaxPrompts = 8

// Prompts lists the prompt tokens of the newest of a cluster's requests (at most MaxPrompts,
// oldest first), so that an estimate can place them one by one on the cluster's pods as its
// gateway does, instead of spreading their work evenly. It is a value: copying a Cluster copies
// it, and building one allocates nothing.
type Prompts struct {
	tokens [MaxPrompts]int32
	n      int
}

// Add appends a request of tokens prompt tokens (0: unknown); when the list is full the oldest
// is dropped.
func (p *Prompts) Add(tokens int) {
	tokens = min(max(tokens, 0), 1<<31-1)
	if p.n == MaxPrompts {
		copy(p.tokens[:], p.tokens[1:])
		p.n--
	}
	p.tokens[p.n] = int32(tokens)
	p.n++
}

// Len is the number of requests listed.
func (p *Prompts) Len() int { return p.n }

// Tokens returns the i-th oldest listed request's prompt tokens.
func (p *Prompts) Tokens(i int) int { return int(p.tokens[i]) }

// Sum is the listed requests' prompt tokens.
func (p *Prompts) Sum() int64 {
	var s int64
	for _, t := range p.tokens[:p.n] {
		s += int64(t)
	}
	return s
}

// work splits n requests of total prompt tokens (total 0: unknown, each then counted as guess)
// into the listed ones, placed one by one, and the older rest, whose tokens are returned.
func (p *Prompts) work(n int, total int64, guess int) (rest float64) {
	listed := min(p.n, max(n, 0))
	if total <= 0 {
		return float64(max(n-listed, 0)) * float64(guess)
	}
	return max(float64(total-p.Sum()), 0)
}

// placed returns the least wait among a cluster's pods once p's requests have been placed, oldest
// first, each on the pod that waits least then, as the gateway places them; level(i) is the
// wait of the cluster's i-th best pod before them (non-decreasing in i) and rate the prefill
// speed per pod. A request of unknown length counts as guess tokens. Only the len+1 best pods
// matter: with len requests placed, one of them is still free of all of them.
func (p *Prompts) placed(level func(i int) time.Duration, pods int, rate float64, guess int) time.Duration {
	var loads [MaxPrompts + 1]time.Duration
	k := min(max(pods, 1), p.n+1)
	for i := range k {
		loads[i] = level(i)
	}
	for _, t := range p.tokens[:p.n] {
		tokens := int(t)
		if tokens == 0 {
			tokens = guess
		}
		least := 0
		for i := 1; i < k; i++ {
			if loads[i] < loads[least] {
				least = i
			}
		}
		loads[least] += seconds(float64(tokens) / rate)
	}
	least := loads[0]
	for _, l := range loads[1:k] {
		least = min(least, l)
	}
	return least
}
