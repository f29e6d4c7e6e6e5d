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
	write("gateway-c1.log", `time=x level=INFO msg="cluster-gateway started" cluster=c1 listen=127.0.0.1:1 metrics=127.0.0.1:9101 profile=default`+"\n")
	write("router-us-east-1.log", `{"time":"x","level":"INFO","msg":"global router started","region":"us-east-1","metrics":"127.0.0.1:9102"}`+"\n")
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
	if len(got) != len(want) || got["gateway-c1"] != want["gateway-c1"] || got["router-us-east-1"] != want["router-us-east-1"] {
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
