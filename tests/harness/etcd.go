package harness

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var (
	etcdOnce sync.Once
	etcdDir  string // the directory etcdBinary built into, removed by Cleanup
	etcdBin  string
	etcdErr  error
)

// etcdBinary returns etcd's own server binary: SWITCHYARD_BIN_DIR/etcd when present, else one
// built once per test process from the etcd server module the router already depends on
// (go.etcd.io/etcd/server/v3 is etcd's main package, mostly compiled already for the router's
// embedded etcd).
func etcdBinary() (string, error) {
	etcdOnce.Do(func() {
		if dir := os.Getenv("SWITCHYARD_BIN_DIR"); dir != "" {
			if p := filepath.Join(dir, "etcd"); isFile(p) {
				etcdBin = p
				return
			}
		}
		root, err := WorkspaceRoot()
		if err != nil {
			etcdErr = err
			return
		}
		if etcdDir, err = os.MkdirTemp("", "switchyard-etcd-"); err != nil {
			etcdErr = err
			return
		}
		bin := filepath.Join(etcdDir, "etcd")
		cmd := exec.Command("go", "build", "-o", bin, "go.etcd.io/etcd/server/v3")
		cmd.Dir = filepath.Join(root, "global-router")
		if out, err := cmd.CombinedOutput(); err != nil {
			etcdErr = fmt.Errorf("harness: build etcd: %w\n%s", err, out)
			return
		}
		etcdBin = bin
	})
	return etcdBin, etcdErr
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Etcd is a single-member etcd server (etcd's own binary, a process of the World) on loopback.
// Its client URL and data directory stay the same across restarts (Stop, then Start), so a
// router pointed at URL finds it again with everything it held.
type Etcd struct {
	*Node
	// URL is the client URL, for a router's --etcd-endpoints.
	URL string
}

// Etcd starts an etcd server and waits until it is healthy.
func (w *World) Etcd() *Etcd {
	w.t.Helper()
	bin, err := etcdBinary()
	if err != nil {
		w.t.Fatal(err)
	}
	n := &Node{w: w, bin: bin, Listen: w.port()}
	n.name = w.name("etcd")
	peer := "http://" + w.port()
	url := "http://" + n.Listen
	n.health = url + "/health"
	n.args = []string{"--name=" + n.name, "--data-dir=" + filepath.Join(w.dir, n.name),
		"--listen-client-urls=" + url, "--advertise-client-urls=" + url,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=" + n.name + "=" + peer, "--initial-cluster-token=" + n.name,
		"--initial-cluster-state=new", "--log-level=warn"}
	w.start(n)
	return &Etcd{Node: n, URL: url}
}

// Put writes key = value straight into etcd (its JSON gateway), around any router: what an
// operator's etcdctl or a broken tool would do.
func (e *Etcd) Put(t *testing.T, key, value string) {
	t.Helper()
	e.call(t, "/v3/kv/put", map[string]string{"key": b64(key), "value": b64(value)})
}

// Delete removes key from etcd.
func (e *Etcd) Delete(t *testing.T, key string) {
	t.Helper()
	e.call(t, "/v3/kv/deleterange", map[string]string{"key": b64(key)})
}

func (e *Etcd) call(t *testing.T, path string, req map[string]string) {
	t.Helper()
	body, _ := json.Marshal(req)
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Post(e.URL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("etcd %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("etcd %s: %d %s", path, resp.StatusCode, b)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
