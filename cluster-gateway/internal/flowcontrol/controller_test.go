package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

var errSaturated = errors.New("saturated")

// fakeScheduler places requests while the model has capacity and records the order.
type fakeScheduler struct {
	mu       sync.Mutex
	capacity map[string]int
	err      error
	placed   []string
}

func (f *fakeScheduler) Schedule(_ context.Context, req *framework.Request) (*framework.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	if f.capacity[req.Model] <= 0 {
		return nil, errSaturated
	}
	f.capacity[req.Model]--
	f.placed = append(f.placed, req.ID)
	return &framework.Result{}, nil
}

func (f *fakeScheduler) add(model string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.capacity[model] += n
}

func (f *fakeScheduler) order() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.placed, ",")
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type harness struct {
	c     *Controller
	sched *fakeScheduler
	clock *fakeClock
	reg   *prometheus.Registry
}

func newHarness(t *testing.T, mutate func(*Config)) *harness {
	t.Helper()
	cfg := DefaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	h := &harness{
		sched: &fakeScheduler{capacity: map[string]int{}},
		clock: &fakeClock{now: time.Unix(1000, 0)},
		reg:   prometheus.NewRegistry(),
	}
	c, err := New(
		cfg,
		h.sched,
		Options{IsSaturated: func(err error) bool { return errors.Is(err, errSaturated) }, Clock: h.clock, Registerer: h.reg},
	)
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	return h
}

type result struct {
	id  string
	err error
}

// admit starts Admit in a goroutine and waits until the request is queued.
func (h *harness) admit(
	t *testing.T,
	ctx context.Context,
	id, model string,
	priority int,
	tenant string,
) <-chan result {
	t.Helper()
	ch := make(chan result, 1)
	req := &framework.Request{ID: id, Model: model, Priority: priority, Tenant: tenant}
	go func() {
		_, err := h.c.Admit(ctx, req)
		ch <- result{id, err}
	}()
	poll.Until(t, 5*time.Second, func() bool { return h.queued(id) }, "request "+id+" queued")
	return ch
}

func (h *harness) queued(id string) bool {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	return slices.ContainsFunc(h.c.q.all(), func(it *item) bool { return it.req.ID == id })
}

func recv(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("no outcome")
		return result{}
	}
}

func TestPriorityOrdering(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	var chans []<-chan result
	for _, r := range []struct {
		id string
		p  int
	}{{"low", 0}, {"high", 5}, {"shed", -1}, {"mid", 1}} {
		chans = append(chans, h.admit(t, ctx, r.id, "m", r.p, ""))
	}
	for i := 0; i < 4; i++ {
		h.sched.add("m", 1)
		h.c.Dispatch(ctx)
	}
	if got := h.sched.order(); got != "high,mid,low,shed" {
		t.Fatalf("order = %s", got)
	}
	for _, ch := range chans {
		if r := recv(t, ch); r.err != nil {
			t.Fatalf("%s: %v", r.id, r.err)
		}
	}
}

func TestTenantFairness(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	var chans []<-chan result
	for _, r := range []struct{ id, tenant string }{{"a1", "a"}, {"a2", "a"}, {"a3", "a"}, {"b1", "b"}, {"b2", "b"}, {"c1", "c"}} {
		chans = append(chans, h.admit(t, ctx, r.id, "m", 0, r.tenant))
	}
	h.sched.add("m", 6)
	h.c.Dispatch(ctx)
	if got := h.sched.order(); got != "a1,b1,c1,a2,b2,a3" {
		t.Fatalf("order = %s", got)
	}
	for _, ch := range chans {
		recv(t, ch)
	}
}

func TestSaturatedModelDoesNotBlockOthers(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	hot := h.admit(t, ctx, "hot", "busy", 5, "")
	cold := h.admit(t, ctx, "cold", "free", 0, "")
	h.sched.add("free", 1)
	h.c.Dispatch(ctx)
	if r := recv(t, cold); r.err != nil {
		t.Fatal(r.err)
	}
	if h.c.Len() != 1 {
		t.Fatalf("len = %d, want the busy model's request still queued", h.c.Len())
	}
	h.sched.add("busy", 1)
	h.c.Dispatch(ctx)
	if r := recv(t, hot); r.err != nil {
		t.Fatal(r.err)
	}
}

func TestTTLExpiry(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.TTL = time.Second })
	ctx := context.Background()
	ch := h.admit(t, ctx, "r", "m", 0, "")
	h.clock.Advance(999 * time.Millisecond)
	h.c.Dispatch(ctx)
	if h.c.Len() != 1 {
		t.Fatal("expired before its TTL")
	}
	h.clock.Advance(time.Millisecond)
	h.c.Dispatch(ctx)
	if r := recv(t, ch); !errors.Is(r.err, ErrOverflow) {
		t.Fatalf("err = %v, want ErrOverflow", r.err)
	}
	if err := testutil.GatherAndCompare(h.reg, strings.NewReader(`
# HELP switchyard_gateway_flow_outcomes_total Requests by flow-control outcome: saturated ones dispatched, error, expired, evicted, rejected or cancelled; handed_back, any a router offered to take elsewhere and got back.
# TYPE switchyard_gateway_flow_outcomes_total counter
switchyard_gateway_flow_outcomes_total{outcome="expired"} 1
`), "switchyard_gateway_flow_outcomes_total"); err != nil {
		t.Fatal(err)
	}
}

func TestQueueFullEvictsSheddableFirst(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxQueue = 2 })
	ctx := context.Background()
	shed := h.admit(t, ctx, "shed", "m", -1, "")
	keep := h.admit(t, ctx, "keep", "m", 0, "")
	// Queue full: a normal request evicts the sheddable one.
	newer := h.admit(t, ctx, "newer", "m", 0, "")
	if r := recv(t, shed); !errors.Is(r.err, ErrOverflow) {
		t.Fatalf("sheddable err = %v, want eviction", r.err)
	}
	// Full of priority-0 requests: sheddable and equal-priority newcomers are rejected at once.
	for _, p := range []int{-1, 0} {
		_, err := h.c.Admit(ctx, &framework.Request{ID: fmt.Sprint("late", p), Model: "m", Priority: p})
		if !errors.Is(err, ErrOverflow) {
			t.Fatalf("priority %d: err = %v, want ErrOverflow", p, err)
		}
	}
	h.sched.add("m", 2)
	h.c.Dispatch(ctx)
	for _, ch := range []<-chan result{keep, newer} {
		if r := recv(t, ch); r.err != nil {
			t.Fatalf("%s: %v", r.id, r.err)
		}
	}
}

func TestCancelWhileQueued(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ch := h.admit(t, ctx, "r", "m", 0, "t")
	cancel()
	if r := recv(t, ch); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", r.err)
	}
	if h.c.Len() != 0 {
		t.Fatalf("len = %d after cancel", h.c.Len())
	}
	h.sched.add("m", 1)
	h.c.Dispatch(context.Background())
	if got := h.sched.order(); got != "" {
		t.Fatalf("cancelled request was scheduled: %s", got)
	}
}

func TestAdmitWithoutQueueing(t *testing.T) {
	other := errors.New("no endpoints")
	tests := []struct {
		name    string
		enabled bool
		capac   int
		schErr  error
		want    error
	}{
		{"capacity", true, 1, nil, nil},
		{"disabled and saturated", false, 0, nil, ErrOverflow},
		{"other error passes through", true, 0, other, other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Enabled = tt.enabled })
			h.sched.add("m", tt.capac)
			h.sched.err = tt.schErr
			_, err := h.c.Admit(context.Background(), &framework.Request{Model: "m"})
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestRunRetriesOnNotifyAndStops(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RetryInterval = time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.c.Run(ctx) }()
	first := h.admit(t, context.Background(), "a", "m", 0, "")
	h.sched.add("m", 1)
	h.c.Notify()
	if r := recv(t, first); r.err != nil {
		t.Fatal(r.err)
	}
	second := h.admit(t, context.Background(), "b", "m", 0, "")
	cancel()
	if r := recv(t, second); !errors.Is(r.err, ErrOverflow) {
		t.Fatalf("err = %v, want ErrOverflow on shutdown", r.err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidatePriorities(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // substring of the error; "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{
			"objectives inside the range",
			func(c *Config) { c.ObjectivePriorities = map[string]int{"critical": 10, "batch": -10} },
			"",
		},
		{
			"objective above the range",
			func(c *Config) { c.ObjectivePriorities = map[string]int{"critical": 11} },
			`objective "critical"`,
		},
		{
			"objective below the range",
			func(c *Config) { c.ObjectivePriorities = map[string]int{"batch": -100} },
			`objective "batch"`,
		},
		{"wider range", func(c *Config) {
			c.MinPriority, c.MaxPriority = -100, 100
			c.ObjectivePriorities = map[string]int{"critical": 100}
		}, ""},
		{"inverted range", func(c *Config) { c.MinPriority, c.MaxPriority = 5, -5 }, "MinPriority"},
		{"default priority outside", func(c *Config) { c.MinPriority = 1 }, "DefaultPriority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mutate(&c)
			err := c.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v, want mention of %q", err, tt.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ObjectivePriorities = map[string]int{"critical": 10, "batch": -1}
	tests := []struct {
		name     string
		headers  map[string]string
		priority int
		tenant   string
		wantErr  bool
	}{
		{"defaults", nil, 0, "", false},
		{"objective", map[string]string{contract.HeaderObjective: "batch"}, -1, "", false},
		{"unknown objective", map[string]string{contract.HeaderObjective: "x"}, 0, "", false},
		{
			"explicit wins",
			map[string]string{contract.HeaderObjective: "critical", contract.HeaderPriority: "3"},
			3,
			"",
			false,
		},
		{"tenant", map[string]string{contract.HeaderTenant: "t1", contract.HeaderFairnessID: "f"}, 0, "t1", false},
		{"fairness id", map[string]string{contract.HeaderFairnessID: "f"}, 0, "f", false},
		{"bad priority", map[string]string{contract.HeaderPriority: "high"}, 0, "", true},
		{"lowest band", map[string]string{contract.HeaderPriority: "-10"}, -10, "", false},
		{"highest band", map[string]string{contract.HeaderPriority: " 10 "}, 10, "", false},
		{"above the range", map[string]string{contract.HeaderPriority: "11"}, 0, "", true},
		{"below the range", map[string]string{contract.HeaderPriority: "-11"}, 0, "", true},
		{"huge", map[string]string{contract.HeaderPriority: "9223372036854775807"}, 0, "", true},
		{"overflowing", map[string]string{contract.HeaderPriority: "99999999999999999999"}, 0, "", true},
		{"fraction", map[string]string{contract.HeaderPriority: "1.5"}, 0, "", true},
		{
			"out of range even with an objective",
			map[string]string{contract.HeaderObjective: "critical", contract.HeaderPriority: "1000"},
			0,
			"",
			true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, tenant, err := cfg.Classify(func(k string) string { return tt.headers[k] })
			if (err != nil) != tt.wantErr || (err == nil && (p != tt.priority || tenant != tt.tenant)) {
				t.Fatalf("got %d %q %v", p, tenant, err)
			}
			var he *HeaderError
			if err != nil &&
				(!errors.As(err, &he) || he.Header != contract.HeaderPriority || !strings.Contains(err.Error(), "from -10 to 10")) {
				t.Fatalf("error %v does not name the header and its range", err)
			}
		})
	}
	if m, err := ParseObjectivePriorities("a=1, b=-2"); err != nil || !slices.Equal([]int{m["a"], m["b"]}, []int{1, -2}) {
		t.Fatalf("ParseObjectivePriorities = %v, %v", m, err)
	}
	if _, err := ParseObjectivePriorities("a=x"); err == nil {
		t.Fatal("want error")
	}
}

// A new request does not overtake queued ones for the same model at its priority or above, even
// when room has freed since the last dispatch pass: it queues behind them and the pass it asks
// for serves the oldest first. A request of a higher priority or another model is scheduled at
// once as before, and one whose router offers to take it elsewhere is handed back.
func TestNewRequestsQueueBehindWaitingOnes(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RetryInterval = time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := h.admit(t, ctx, "old", "m", 0, "")
	h.sched.add("m", 1) // room for one, not yet offered to the queue
	h.sched.add("other", 1)
	if _, err := h.c.Admit(ctx, &framework.Request{ID: "elsewhere", Model: "other"}); err != nil {
		t.Fatalf("another model's request: %v", err)
	}
	_, err := h.c.Admit(ctx, &framework.Request{ID: "offered", Model: "m", HandBackAfter: time.Second})
	if !errors.Is(err, ErrOverflow) || !strings.Contains(err.Error(), "1 requests for m queued ahead") {
		t.Fatalf("a request with a hand-back offer: %v, want it handed back", err)
	}
	done := make(chan error, 1)
	go func() { done <- h.c.Run(ctx) }()
	second := h.admit(t, ctx, "new", "m", 0, "")
	if r := recv(t, first); r.err != nil {
		t.Fatal(r.err)
	}
	if got := h.sched.order(); got != "elsewhere,old" {
		t.Fatalf("order %s, want the queued request to get the room", got)
	}
	h.sched.add("m", 1)
	if _, err := h.c.Admit(ctx, &framework.Request{ID: "urgent", Model: "m", Priority: 1}); err != nil {
		t.Fatalf("a higher-priority request: %v", err)
	}
	h.c.Notify()
	h.sched.add("m", 1)
	h.c.Notify()
	if r := recv(t, second); r.err != nil {
		t.Fatal(r.err)
	}
	if got := h.sched.order(); got != "elsewhere,old,urgent,new" {
		t.Fatalf("order %s", got)
	}
	if got := testutil.ToFloat64(h.c.metrics.outcomes.WithLabelValues("handed_back")); got != 1 {
		t.Fatalf("handed_back outcomes %v, want 1", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
