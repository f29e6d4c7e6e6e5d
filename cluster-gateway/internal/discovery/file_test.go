package discovery_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract/poll"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/discovery"
)

func TestParseFile(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    []datastore.EndpointSpec
		wantErr string
	}{
		{name: "short and long forms", yaml: `
- 10.0.0.1:8000
- address: 10.0.0.2:8000
  name: pod-b
  engine: sglang
  labels: {gpu: a10g}
`, want: []datastore.EndpointSpec{
			{Address: "10.0.0.1:8000", Engine: datastore.EngineVLLM},
			{Address: "10.0.0.2:8000", Name: "pod-b", Engine: datastore.EngineSGLang, Labels: map[string]string{"gpu": "a10g"}},
		}},
		{name: "empty file", yaml: " \n", wantErr: "file is empty"},
		{name: "empty list", yaml: "[]", want: []datastore.EndpointSpec{}},
		{name: "bad address", yaml: "- 10.0.0.1\n", wantErr: "entry 1"},
		{name: "unknown engine", yaml: "- {address: a:1, engine: tgi}\n", wantErr: "unknown engine"},
		{name: "unknown key", yaml: "- {address: a:1, port: 2}\n", wantErr: `unknown key "port"`},
		{name: "duplicate", yaml: "- a:1\n- {address: a:1}\n", wantErr: "entry 2"},
		{name: "not a list", yaml: "endpoints: [a:1]\n", wantErr: "parse endpoints"},
		{name: "nested list item", yaml: "- [a:1]\n", wantErr: "string or a mapping"},
		{name: "missing address", yaml: "- {name: x}\n", wantErr: "want host:port"},
		{name: "roles", yaml: `
- {address: a:1, role: prefill}
- {address: b:1, labels: {llm-d.ai/role: decode, gpu: h100}}
- {address: c:1, role: both, labels: {llm-d.ai/role: both}}
`, want: []datastore.EndpointSpec{
			{Address: "a:1", Engine: datastore.EngineVLLM, Labels: map[string]string{"llm-d.ai/role": "prefill"}},
			{Address: "b:1", Engine: datastore.EngineVLLM, Labels: map[string]string{"llm-d.ai/role": "decode", "gpu": "h100"}},
			{Address: "c:1", Engine: datastore.EngineVLLM, Labels: map[string]string{"llm-d.ai/role": "both"}},
		}},
		{name: "unknown role", yaml: "- {address: a:1, role: encode}\n", wantErr: `role "encode"`},
		{name: "unknown role label", yaml: "- {address: a:1, labels: {llm-d.ai/role: x}}\n", wantErr: "label llm-d.ai/role"},
		{
			name:    "role disagrees",
			yaml:    "- {address: a:1, role: decode, labels: {llm-d.ai/role: prefill}}\n",
			wantErr: "disagrees",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := discovery.ParseFile([]byte(tt.yaml))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.Address != w.Address || g.Name != w.Name || g.Engine != w.Engine || len(g.Labels) != len(w.Labels) ||
					g.Labels["gpu"] != w.Labels["gpu"] {
					t.Fatalf("entry %d: got %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func FuzzParseFile(f *testing.F) {
	f.Add([]byte("- a:1\n- {address: b:2, engine: trtllm, labels: {x: y}}\n"))
	f.Add([]byte("- &a {address: a:1}\n- *a\n"))
	f.Add([]byte("- vllm-0=a:1\n- {address: b:2, name: vllm-1}\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		specs, err := discovery.ParseFile(raw)
		if err != nil {
			return
		}
		for _, s := range specs {
			if discovery.ValidateAddress(s.Address) != nil || s.Engine == "" ||
				(s.Name != "" && discovery.ValidateName(s.Name) != nil) {
				t.Fatalf("invalid spec accepted: %+v", s)
			}
		}
	})
}

// runFile starts a file source polling every few milliseconds.
func runFile(t *testing.T, path string, dst discovery.Syncer, reg prometheus.Registerer) <-chan error {
	t.Helper()
	cfg := discovery.DefaultFileConfig()
	cfg.Path, cfg.PollInterval = path, 5*time.Millisecond
	src, err := discovery.NewFile(cfg, dst, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	t.Cleanup(cancel)
	return done
}

// waitTimeout bounds every wait for a condition in these tests (poll.Until): generous, as a
// busy machine is slow.
const waitTimeout = 10 * time.Second

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "endpoints.yaml")
	writeFile(t, path, "- a:1\n- b:1\n")
	rec := &recorder{}
	reg := prometheus.NewRegistry()
	runFile(t, path, rec, reg)
	poll.Until(t, waitTimeout, func() bool { n, _ := rec.last(); return n == 1 }, "first load")

	writeFile(t, path, "- b:1\n- c:1\n")
	poll.Until(
		t,
		waitTimeout,
		func() bool { _, a := rec.last(); return slices.Equal(a, []string{"b:1", "c:1"}) },
		"reload",
	)

	writeFile(t, path, "- not an address\n")
	poll.Until(t, waitTimeout, func() bool {
		return gatherValue(t, reg, "switchyard_gateway_discovery_errors_total") >= 1
	}, "error counted")
	os.Remove(path)
	time.Sleep(30 * time.Millisecond)
	n, a := rec.last()
	if n != 2 || !slices.Equal(a, []string{"b:1", "c:1"}) {
		t.Fatalf("bad or missing file changed the set: %d syncs, last %v", n, a)
	}
	writeFile(t, path, "- d:1\n")
	poll.Until(t, waitTimeout, func() bool { _, a := rec.last(); return slices.Equal(a, []string{"d:1"}) }, "recovery")
}

// gatherValue returns the value of the first series of counter family name (0 if absent).
func gatherValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// TestFileConfigMapSwap follows the way the kubelet updates a mounted ConfigMap: the file is a
// symlink through "..data", which is atomically re-pointed at a new timestamped directory.
func TestFileConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	mkVersion := func(name, content string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "endpoints.yaml"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(name, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	mkVersion("..v1", "- a:1\n")
	path := filepath.Join(dir, "endpoints.yaml")
	if err := os.Symlink("..data/endpoints.yaml", path); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	runFile(t, path, rec, nil)
	poll.Until(t, waitTimeout, func() bool { _, a := rec.last(); return slices.Equal(a, []string{"a:1"}) }, "first load")
	mkVersion("..v2", "- e:1\n- f:1\n")
	poll.Until(
		t,
		waitTimeout,
		func() bool { _, a := rec.last(); return slices.Equal(a, []string{"e:1", "f:1"}) },
		"swap seen",
	)
}

func TestFileFirstLoadFails(t *testing.T) {
	done := runFile(t, filepath.Join(t.TempDir(), "missing.yaml"), &recorder{}, nil)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "read endpoints file") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not fail on a missing file")
	}
	if _, err := discovery.NewFile(discovery.FileConfig{}, &recorder{}, nil, nil); err == nil {
		t.Fatal("empty config accepted")
	}
}
