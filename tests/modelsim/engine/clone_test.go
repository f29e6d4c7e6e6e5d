package engine_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
)

// cloneState builds a simulator in a given state and returns it with the handles of its requests.
type cloneState struct {
	name  string
	setup func(t *testing.T) (*engine.Simulator, []*engine.Handle)
	// check verifies that the state is the one named (so that the case tests what it says).
	check func(t *testing.T, snap engine.Snapshot, hs []*engine.Handle)
	// adapter, when set, is used by some of the requests submitted after cloning.
	adapter string
}

func cloneStates() []cloneState {
	return []cloneState{
		{
			name: "idle",
			setup: func(t *testing.T) (*engine.Simulator, []*engine.Handle) {
				return newSim(t, "h100", nil), nil
			},
			check: func(t *testing.T, snap engine.Snapshot, _ []*engine.Handle) {
				if snap.Running+snap.Waiting+snap.UsedBlocks+int(snap.Stats.Steps) != 0 {
					t.Fatalf("not idle: %+v", snap)
				}
			},
		},
		{
			name: "idle with cached prefixes",
			setup: func(t *testing.T) (*engine.Simulator, []*engine.Handle) {
				sim := newSim(t, "h100", nil)
				hs := []*engine.Handle{submit(t, sim, 0, request("shared", 3000, 20)),
					submit(t, sim, 50*time.Millisecond, request("other", 1000, 20))}
				sim.Run()
				return sim, hs
			},
			check: func(t *testing.T, snap engine.Snapshot, _ []*engine.Handle) {
				if snap.Running != 0 || snap.CachedBlocks < 200 {
					t.Fatalf("running=%d cached blocks=%d, want 0 and >= 200", snap.Running, snap.CachedBlocks)
				}
			},
		},
		{
			name: "busy with chunked prefill",
			setup: func(t *testing.T) (*engine.Simulator, []*engine.Handle) {
				sim := newSim(t, "a10g", nil)
				hs := []*engine.Handle{submit(t, sim, 0, request("long", 10000, 50)),
					submit(t, sim, 20*time.Millisecond, request("short", 200, 50))}
				sim.RunUntil(time.Second)
				return sim, hs
			},
			check: func(t *testing.T, snap engine.Snapshot, hs []*engine.Handle) {
				if snap.Running == 0 || hs[0].Progress().Generated != 0 {
					t.Fatalf("running=%d generated=%d, want a prefill in progress", snap.Running, hs[0].Progress().Generated)
				}
			},
		},
		{
			name: "with preemption",
			setup: func(t *testing.T) (*engine.Simulator, []*engine.Handle) {
				sim := newSim(t, "a10g", nil)
				var hs []*engine.Handle
				for i := range 8 {
					hs = append(hs, submit(t, sim, 0, request(fmt.Sprint("pre", i), 2500, 1500)))
				}
				for sim.Engine().Snapshot().Stats.Preemptions == 0 && sim.Now() < 10*time.Minute {
					sim.RunUntil(sim.Now() + 100*time.Millisecond)
				}
				return sim, hs
			},
			check: func(t *testing.T, snap engine.Snapshot, _ []*engine.Handle) {
				if snap.Stats.Preemptions == 0 || snap.Waiting == 0 {
					t.Fatalf("preemptions=%d waiting=%d, want both > 0", snap.Stats.Preemptions, snap.Waiting)
				}
			},
		},
		{
			name:    "with adapter loads and pending arrivals",
			adapter: "lora-c",
			setup: func(t *testing.T) (*engine.Simulator, []*engine.Handle) {
				sim := newSim(t, "h100", func(c *engine.Config) { c.MaxLoras = 1 })
				var hs []*engine.Handle
				for i, a := range []string{"lora-a", "lora-b", "", "lora-a"} {
					r := request(fmt.Sprint("lora", i), 500, 100)
					r.Adapter = a
					hs = append(hs, submit(t, sim, time.Duration(i)*10*time.Millisecond, r))
				}
				hs = append(hs, submit(t, sim, 5*time.Second, request("late", 100, 10)))
				sim.RunUntil(300 * time.Millisecond)
				return sim, hs
			},
			check: func(t *testing.T, snap engine.Snapshot, hs []*engine.Handle) {
				if snap.Stats.AdapterLoads == 0 || len(snap.WaitingAdapters) == 0 || hs[4].Progress().Arrival != 0 {
					t.Fatalf("loads=%d waiting adapters=%v late arrival=%v, want loads, a waiting adapter and a pending arrival",
						snap.Stats.AdapterLoads, snap.WaitingAdapters, hs[4].Progress().Arrival)
				}
			},
		},
	}
}

// submitFuture submits the same requests to sim, from virtual time from: one that shares a cached
// prefix, a long one, a burst of short ones and, with an adapter, adapter requests.
func submitFuture(t *testing.T, sim *engine.Simulator, from time.Duration, adapter string) []*engine.Handle {
	t.Helper()
	hs := []*engine.Handle{
		submit(t, sim, from, request("shared", 3200, 30)),
		submit(t, sim, from+5*time.Millisecond, request("future-long", 6000, 80)),
	}
	for i := range 6 {
		r := request(fmt.Sprint("future", i), 300+100*i, 40)
		if adapter != "" && i%2 == 0 {
			r.Adapter = adapter
		}
		hs = append(hs, submit(t, sim, from+time.Duration(i+2)*7*time.Millisecond, r))
	}
	return hs
}

func TestCloneEvolvesLikeOriginal(t *testing.T) {
	for _, st := range cloneStates() {
		t.Run(st.name, func(t *testing.T) {
			orig, origHs := st.setup(t)
			ref, refHs := st.setup(t) // never cloned: what orig must stay equal to
			st.check(t, orig.Engine().Snapshot(), origHs)
			before := orig.Engine().Snapshot()
			twin, mapped := orig.CloneMapped()
			scratch := orig.Clone()
			if got := twin.Engine().Snapshot(); !reflect.DeepEqual(got, before) {
				t.Fatalf("clone's snapshot differs from the original's:\n%+v\n%+v", got, before)
			}

			// Mutating a clone must leave the original untouched.
			for i := range 20 {
				r := request(fmt.Sprint("scratch", i), 2000, 300)
				if _, err := scratch.Submit(scratch.Now(), r); err != nil {
					t.Fatal(err)
				}
			}
			scratch.Run()
			if got := orig.Engine().Snapshot(); !reflect.DeepEqual(got, before) {
				t.Fatalf("running a clone changed the original:\n%+v\n%+v", got, before)
			}

			from := orig.Now() + 2*time.Millisecond
			sims := []*engine.Simulator{orig, twin, ref}
			var futures [3][]*engine.Handle
			for i, s := range sims {
				futures[i] = submitFuture(t, s, from, st.adapter)
				s.Run()
			}
			for i, h := range origHs {
				twinH := mapped[h]
				if twinH == nil && !h.Progress().Done && h.Progress().Generated == 0 && h.Progress().Arrival == 0 {
					t.Fatalf("request %d has no handle in the clone", i)
				}
				if twinH != nil {
					sameProgress(t, fmt.Sprintf("clone, request %d", i), twinH, h)
				}
				sameProgress(t, fmt.Sprintf("reference, request %d", i), refHs[i], h)
			}
			for i, h := range futures[0] {
				sameProgress(t, fmt.Sprintf("clone, future %d", i), futures[1][i], h)
				sameProgress(t, fmt.Sprintf("reference, future %d", i), futures[2][i], h)
			}
			want := orig.Engine().Snapshot()
			for i, s := range sims[1:] {
				if got := s.Engine().Snapshot(); !reflect.DeepEqual(got, want) {
					t.Fatalf("sim %d ended in another state:\n%+v\n%+v", i+1, got, want)
				}
			}
		})
	}
}

func sameProgress(t *testing.T, what string, got, want *engine.Handle) {
	t.Helper()
	g, w := got.Progress(), want.Progress()
	if !w.Done {
		t.Fatalf("%s: original not done: %+v", what, w)
	}
	if !slices.Equal(g.TokenTimes, w.TokenTimes) || len(w.TokenTimes) != w.Generated {
		t.Fatalf("%s: token times differ:\n%v\n%v", what, g.TokenTimes, w.TokenTimes)
	}
	g.TokenTimes, w.TokenTimes = nil, nil
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s: progress %+v, want %+v", what, g, w)
	}
}

func TestSubmitAfterRunUntilMatchesUpfront(t *testing.T) {
	// The oracle advances a pod to each arrival (plus API overhead) before submitting it; that must
	// give the timings of submitting everything up front, also when a step spans the arrival.
	tests := []struct {
		profile string
		gap     time.Duration
	}{
		{"h100", 3 * time.Millisecond},
		{"a10g", 17 * time.Millisecond},
		{"a10g", 400 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.profile, "/", tt.gap), func(t *testing.T) {
			upfront, stepwise := newSim(t, tt.profile, nil), newSim(t, tt.profile, nil)
			overhead := upfront.Engine().Profile().APIOverhead
			var a, b []*engine.Handle
			for i := range 30 {
				at := time.Duration(i) * tt.gap
				r := request(fmt.Sprint("s", i), 200+(i*397)%2500, 20+(i*31)%90)
				a = append(a, submit(t, upfront, at, r))
				stepwise.RunUntil(at + overhead)
				b = append(b, submit(t, stepwise, at, r))
			}
			upfront.Run()
			stepwise.Run()
			for i := range a {
				sameProgress(t, fmt.Sprint("request ", i), b[i], a[i])
			}
		})
	}
}
