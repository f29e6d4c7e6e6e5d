package discovery_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/discovery"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

// recorder is a Syncer that keeps every published set.
type recorder struct {
	mu   sync.Mutex
	sets [][]datastore.EndpointSpec
}

func (r *recorder) Sync(specs []datastore.EndpointSpec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sets = append(r.sets, specs)
}

// last returns the number of sets published and the newest one's addresses.
func (r *recorder) last() (int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sets) == 0 {
		return 0, nil
	}
	return len(r.sets), addresses(r.sets[len(r.sets)-1])
}

func addresses(specs []datastore.EndpointSpec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Address
	}
	slices.Sort(out)
	return out
}

func TestParseList(t *testing.T) {
	tests := []struct {
		list    string
		want    []string
		wantErr string
	}{
		{list: "10.0.0.1:8000", want: []string{"10.0.0.1:8000"}},
		{list: " a.example:80 , 127.0.0.1:1,[::1]:65535,", want: []string{"127.0.0.1:1", "[::1]:65535", "a.example:80"}},
		{list: "", wantErr: "empty endpoint list"},
		{list: " , ", wantErr: "empty endpoint list"},
		{list: "10.0.0.1", wantErr: "want host:port"},
		{list: "http://10.0.0.1:80", wantErr: "want host:port"},
		{list: ":8000", wantErr: "bad host"},
		{list: "pod\xff.example:8000", wantErr: "bad host"},
		{list: "a:0", wantErr: "port must be"},
		{list: "a:65536", wantErr: "port must be"},
		{list: "a:http", wantErr: "port must be"},
		{list: "a:1,a:1", wantErr: "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.list, func(t *testing.T) {
			specs, err := discovery.ParseList(tt.list)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := addresses(specs); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for _, s := range specs {
				if s.Engine != datastore.EngineVLLM {
					t.Fatalf("engine %q", s.Engine)
				}
			}
		})
	}
}

func TestStaticRun(t *testing.T) {
	if _, err := discovery.NewStatic("nope", &recorder{}); err == nil {
		t.Fatal("bad list accepted")
	}
	store := datastore.NewStore(nil, nil)
	s, err := discovery.NewStatic("127.0.0.1:8001,127.0.0.1:8002", store)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	poll.Until(t, waitTimeout, func() bool { return store.Len() == 2 }, "the store synced")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
