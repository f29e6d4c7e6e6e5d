package soak_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/soak"
)

func TestWriteSamples(t *testing.T) {
	rep := &soak.Report{Processes: []*soak.Process{
		{Name: "gateway-a", Points: []soak.Point{{At: 5 * time.Second, HeapBytes: 1 << 20, Goroutines: 60}}},
		{Name: "router-b", Points: []soak.Point{{At: 2500 * time.Millisecond, HeapBytes: 42, Goroutines: 7}}},
	}}
	var b strings.Builder
	if err := rep.WriteSamples(&b); err != nil {
		t.Fatal(err)
	}
	want := "process,seconds,heap_inuse_bytes,goroutines\ngateway-a,5.0,1048576,60\nrouter-b,2.5,42,7\n"
	if b.String() != want {
		t.Errorf("CSV:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := writeFile(dir, name, content); err != nil {
			t.Fatal(err)
		}
	}
	write(
		"gateway-c1.log",
		`time=x level=INFO msg="cluster-gateway started" cluster=c1 listen=127.0.0.1:1 metrics=127.0.0.1:9101 profile=default`+"\n",
	)
	write(
		"router-us-east-1.log",
		`{"time":"x","level":"INFO","msg":"global router started","region":"us-east-1","metrics":"127.0.0.1:9102"}`+"\n",
	)
	write("modelsim-c1.log", "pods started\n")
	procs, err := soak.Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range procs {
		got[p.Name] = p.Metrics
	}
	want := map[string]string{"gateway-c1": "127.0.0.1:9101", "router-us-east-1": "127.0.0.1:9102"}
	if len(got) != len(want) || got["gateway-c1"] != want["gateway-c1"] ||
		got["router-us-east-1"] != want["router-us-east-1"] {
		t.Errorf("Discover = %v, want %v", got, want)
	}
	write("gateway-c2.log", "no start line\n")
	if _, err := soak.Discover(dir); err == nil {
		t.Error("Discover with a gateway log without a start line: no error")
	}
}

func writeFile(dir, name, content string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600)
}

// HeapProfile saves a process's heap profile, and says what is wrong when the process serves none.
func TestHeapProfile(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/debug/pprof/heap", pprof.Handler("heap"))
	on := httptest.NewServer(mux)
	defer on.Close()
	off := httptest.NewServer(http.NotFoundHandler())
	defer off.Close()
	dir := t.TempDir()

	p := &soak.Process{Name: "gateway-a", Metrics: strings.TrimPrefix(on.URL, "http://")}
	path := filepath.Join(dir, "a.pb.gz")
	if err := p.HeapProfile(context.Background(), on.Client(), path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b { // pprof profiles are gzipped protobuf
		t.Fatalf("profile is not gzipped: % x", b[:min(len(b), 8)])
	}

	p = &soak.Process{Name: "gateway-b", Metrics: strings.TrimPrefix(off.URL, "http://")}
	err = p.HeapProfile(context.Background(), off.Client(), filepath.Join(dir, "b.pb.gz"))
	if err == nil || !strings.Contains(err.Error(), "--enable-pprof") {
		t.Fatalf("error without profiles = %v, want one naming --enable-pprof", err)
	}
}

func TestReadSamplesRoundTrip(t *testing.T) {
	rep := &soak.Report{Processes: []*soak.Process{
		{
			Name: "gateway-a",
			Points: []soak.Point{
				{At: 5 * time.Second, HeapBytes: 1 << 20, Goroutines: 60},
				{At: 10 * time.Second, HeapBytes: 2 << 20, Goroutines: 61},
			},
		},
		{Name: "router-b", Points: []soak.Point{{At: 2500 * time.Millisecond, HeapBytes: 42, Goroutines: 7}}},
	}}
	var b strings.Builder
	if err := rep.WriteSamples(&b); err != nil {
		t.Fatal(err)
	}
	procs, err := soak.ReadSamples(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(procs) != 2 || procs[0].Name != "gateway-a" || len(procs[0].Points) != 2 ||
		procs[1].Points[0] != rep.Processes[1].Points[0] ||
		procs[0].Points[1] != rep.Processes[0].Points[1] {
		t.Fatalf("read back %+v", procs)
	}
}

func TestReadSamplesErrors(t *testing.T) {
	const head = "process,seconds,heap_inuse_bytes,goroutines\n"
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "header"},
		{"wrong header", "a,b,c,d\n", "header"},
		{"no samples", head, "no samples"},
		{"short record", head + "g,1.0,5\n", "wrong number of fields"},
		{"not a number", head + "g,1.0,lots,5\n", `line 2: heap_inuse_bytes "lots"`},
		{"negative", head + "g,1.0,5,5\ng,-2,5,5\n", "line 3: seconds"},
		{"infinite", head + "g,1.0,+Inf,5\n", "line 2: heap_inuse_bytes"},
		{"no name", head + ",1.0,5,5\n", "line 2: bad process name"},
		{"back in time", head + "g,5.0,1,1\nh,1.0,1,1\ng,4.0,1,1\n", "line 4: g goes back in time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := soak.ReadSamples(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// Rejudge judges saved samples with the given warm-up: growth that happens only during a long
// warm-up (a cache filling to its bound) passes, growth after it fails.
func TestRejudge(t *testing.T) {
	var pts []soak.Point
	for i := range 60 {
		heap := 10 << 20
		if i < 30 {
			heap += i << 20 // fills for 30 samples, then level
		} else {
			heap += 30 << 20
		}
		pts = append(pts, soak.Point{At: time.Duration(i) * 10 * time.Second, HeapBytes: float64(heap), Goroutines: 50})
	}
	procs := []*soak.Process{{Name: "gateway-a", Points: pts}}
	cfg := soak.DefaultConfig()
	cfg.Warmup = time.Minute
	rep, err := soak.Rejudge(cfg, procs)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pass {
		t.Fatal("growth after a 1-minute warm-up passed")
	}
	cfg.Warmup = 5 * time.Minute
	if rep, err = soak.Rejudge(cfg, procs); err != nil || !rep.Pass {
		t.Fatalf("level after a 5-minute warm-up: pass %v, err %v", rep.Pass, err)
	}
	var b strings.Builder
	rep.Write(&b)
	if !strings.Contains(b.String(), "no request counts") || !strings.Contains(b.String(), "soak: PASS") {
		t.Fatalf("report:\n%s", b.String())
	}
	cfg.Warmup = 9 * time.Minute // 6 samples left: enough
	if _, err := soak.Rejudge(cfg, procs); err != nil {
		t.Fatal(err)
	}
	cfg.Warmup = 10 * time.Minute
	if _, err := soak.Rejudge(cfg, procs); err == nil {
		t.Fatal("too few samples after the warm-up: no error")
	}
}

func FuzzReadSamples(f *testing.F) {
	f.Add("process,seconds,heap_inuse_bytes,goroutines\ngateway-a,5.0,1048576,60\nrouter-b,2.5,42,7\n")
	f.Add("process,seconds,heap_inuse_bytes,goroutines\ng,1e300,1,1\n")
	f.Add("process,seconds,heap_inuse_bytes,goroutines\n\"g,\n\",1,1,1\n")
	f.Fuzz(func(t *testing.T, in string) {
		procs, err := soak.ReadSamples(strings.NewReader(in))
		if err != nil {
			return
		}
		// What was read writes back and reads again to the same text.
		var a, b strings.Builder
		if err := (&soak.Report{Processes: procs}).WriteSamples(&a); err != nil {
			t.Fatal(err)
		}
		again, err := soak.ReadSamples(strings.NewReader(a.String()))
		if err != nil {
			t.Fatalf("reading back %q: %v", a.String(), err)
		}
		if err := (&soak.Report{Processes: again}).WriteSamples(&b); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Fatalf("round trip changed:\n%s\n%s", a.String(), b.String())
		}
	})
}
