package app_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
	"github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1/adminv1connect"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
	"github.com/switchyard-dev/switchyard/global-router/internal/app"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd/etcdtest"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
)

// shared is one etcd member for the package: every router of a test uses it, as production routers
// share one etcd cluster. Tests keep apart by naming their clusters uniquely.
var shared *etcdtest.Cluster

func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m, 1, &shared)) }

const (
	region = "us-east-1"
	model  = "llama"
	token  = "app-test-token"
)

var testCounter atomic.Int64

// env is a gossip pool of two gateways (a preferred cluster and a slow one, both in region) and
// the files routers need to join it. The preferred cluster answers at a fake gateway that
// streams every request a short chat completion; the slow one advertises a URL nobody answers.
type env struct {
	pool               *gossiptest.Pool
	preferred, slow    string
	keyFile, tokenFile string
}

// newEnv starts two gateway nodes publishing a heartbeat every 300 ms until the test ends.
func newEnv(tb testing.TB) *env {
	tb.Helper()
	n := testCounter.Add(1)
	e := &env{preferred: fmt.Sprintf("fast-%d", n), slow: fmt.Sprintf("slow-%d", n)}
	gw := httptest.NewUnstartedServer(fakeGateway(e.preferred))
	gw.Config.Protocols = new(http.Protocols)
	gw.Config.Protocols.SetHTTP1(true)
	gw.Config.Protocols.SetUnencryptedHTTP2(true) // gateways accept h2c from routers
	gw.Start()
	tb.Cleanup(gw.Close)
	dir := tb.TempDir()
	e.keyFile, e.tokenFile = filepath.Join(dir, "gossip.key"), filepath.Join(dir, "admin-token")
	if err := os.WriteFile(
		e.keyFile,
		[]byte(base64.StdEncoding.EncodeToString(gossiptest.TestKey)+"\n"),
		0o600,
	); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(e.tokenFile, []byte(token+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	names := []string{e.preferred, e.slow}
	e.pool = gossiptest.Start(tb, 2, func(i int, c *gossip.Config) {
		c.Timings = gossiptest.RelaxedTimings()
		c.NodeName, c.Cluster, c.Region = "gw-"+names[i], names[i], region
		c.AdvertiseURL = "http://" + names[i] + ".test:8080"
		if i == 0 {
			c.AdvertiseURL = gw.URL
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	tb.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for i, ttft := range []float32{50, 5000} { // the slow cluster is never near the best
				m := &gossipv1.ModelCapacity{Name: model, ReadyPods: 4, TotalKvTokens: 400_000, FreeKvTokens: 300_000,
					PredictedTtftMs: ttft, PrefillTokensPerSecond: 40_000}
				if _, err := e.pool.Node(i).Publish(&gossipv1.CapacitySummary{Models: []*gossipv1.ModelCapacity{m}}); err != nil {
					tb.Errorf("publish: %v", err)
					return
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	return e
}

// fakeGateway answers every request as cluster's gateway would a streamed chat completion: the
// cluster and region headers, then two server-sent events.
func fakeGateway(cluster string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Switchyard-Cluster", cluster)
		w.Header().Set("X-Switchyard-Region", region)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
	})
}

// tlsClient returns a client that trusts roots (nil: the system roots) and presents certs, over
// HTTP/2 by ALPN or, with h2 false, HTTP/1.1 only.
func tlsClient(roots *x509.CertPool, certs []tls.Certificate, h2 bool) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// router is one global router run in process by app.Run.
type router struct {
	cfg    app.Config
	admin  adminv1connect.AdminServiceClient
	cancel context.CancelFunc
	done   chan error
}

// startRouter runs a router of region on loopback free ports, on the shared etcd, joined to e's
// pool; it stops when the test ends (and the test fails unless Run returned nil).
func startRouter(tb testing.TB, e *env, name string) *router {
	tb.Helper()
	return startRouterWith(tb, e, name, nil)
}

// startRouterWith is startRouter with edit applied to the configuration last (nil: none). A port
// chosen free can be taken by another test before the router binds it: when Run fails on an
// address in use before the router is ready, the router is started again on new ports (edit is
// applied again, so ports it chooses are chosen anew).
func startRouterWith(tb testing.TB, e *env, name string, edit func(*app.Config)) *router {
	tb.Helper()
	return startRouterUntil(tb, e, name, edit, "/readyz")
}

// startRouterUntil is startRouterWith waiting for path on the metrics port to answer 200
// ("/healthz" for a router that is not expected to become ready).
func startRouterUntil(tb testing.TB, e *env, name string, edit func(*app.Config), path string) *router {
	tb.Helper()
	for attempt := 1; ; attempt++ {
		cfg := app.DefaultConfig()
		cfg.Region, cfg.NodeName, cfg.DataDir = region, name, tb.TempDir()
		cfg.EtcdEndpoints = shared.Endpoints()
		cfg.GossipKeyFile, cfg.GossipProfile, cfg.GossipJoin = e.keyFile, "lan", []string{e.pool.Seed()}
		cfg.AdminTokenFile, cfg.LogLevel = e.tokenFile, "warn"
		for _, addr := range []*string{&cfg.Listen, &cfg.AdminListen, &cfg.MetricsListen, &cfg.GossipBind} {
			*addr = freeAddr(tb)
		}
		if edit != nil {
			edit(&cfg)
		}
		if err := cfg.Validate(); err != nil {
			tb.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := &router{cfg: cfg, cancel: cancel, done: make(chan error, 1)}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		go func() { r.done <- app.Run(ctx, cfg, log) }()
		r.admin = adminv1connect.NewAdminServiceClient(http.DefaultClient, "http://"+cfg.AdminListen,
			connect.WithInterceptors(admintest.WithToken(token)))
		err := pollHTTP("http://"+cfg.MetricsListen+path, http.StatusOK, r.done)
		if err == nil {
			tb.Cleanup(func() { r.stop(tb) })
			return r
		}
		cancel()
		var stopped *stoppedError
		if errors.As(err, &stopped) && embedetcd.IsAddrInUse(stopped.err) && attempt < 5 {
			tb.Logf("router %s: %v; starting it again on new ports", name, stopped.err)
			continue
		}
		r.stop(tb)
		tb.Fatal(err)
	}
}

// freeAddr returns a loopback address with a port free now.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	port, err := embedetcd.FreePort("127.0.0.1")
	if err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// stop cancels the router and waits for Run to return; a non-nil error fails the test.
func (r *router) stop(tb testing.TB) {
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			tb.Errorf("router %s: Run = %v", r.cfg.NodeName, err)
		}
		r.done <- err // later stops see it too
	case <-time.After(60 * time.Second):
		tb.Errorf("router %s did not stop", r.cfg.NodeName)
	}
}

// waitHTTP polls url until it answers status, failing the test if done delivers first or 60 s pass.
func waitHTTP(tb testing.TB, url string, status int, done chan error) {
	tb.Helper()
	if err := pollHTTP(url, status, done); err != nil {
		tb.Fatal(err)
	}
}

// stoppedError is pollHTTP's error when the router stopped first: err is what its Run returned.
type stoppedError struct {
	url string
	err error
}

func (e *stoppedError) Error() string {
	return fmt.Sprintf("router stopped while waiting for %s: %v", e.url, e.err)
}

// pollHTTP polls url until it answers status; it returns a *stoppedError if done delivers first
// (the value is put back for later readers) and an error after 60 s.
func pollHTTP(url string, status int, done chan error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := poll.Wait(ctx, func(ctx context.Context) error {
		err := answers(ctx, url, status)
		if err == nil {
			return nil
		}
		select {
		case runErr := <-done:
			done <- runErr
			return poll.Stop(&stoppedError{url: url, err: runErr})
		default:
			return err
		}
	})
	if _, ok := errors.AsType[*stoppedError](err); err != nil && !ok {
		return fmt.Errorf("%s never answered %d: %w", url, status, err)
	}
	return err
}

// answers returns nil if a GET of url answers status, and an error naming what it got otherwise.
func answers(ctx context.Context, url string, status int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("new request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != status {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// chosen returns the cluster r would send a request for model to ("" when none or on error).
func (r *router) chosen(ctx context.Context) string {
	resp, err := r.admin.ExplainRoute(
		ctx,
		connect.NewRequest(&adminv1.ExplainRouteRequest{Model: model, PromptTokens: 1000}),
	)
	if err != nil {
		return ""
	}
	return resp.Msg.GetChosenCluster()
}

// waitChosen polls r until it chooses cluster, and returns how long that took from start.
func (r *router) waitChosen(ctx context.Context, cluster string, start time.Time) (time.Duration, error) {
	for {
		if r.chosen(ctx) == cluster {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("router %s: never chose %s: %w", r.cfg.NodeName, cluster, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// setDrain drains (or undrains) cluster through r's admin API.
func setDrain(ctx context.Context, r *router, cluster string, drain bool) error {
	_, err := r.admin.DrainCluster(ctx, connect.NewRequest(&adminv1.DrainClusterRequest{Cluster: cluster, Drain: drain}))
	if err != nil {
		return fmt.Errorf("drain %s=%v: %w", cluster, drain, err)
	}
	return nil
}
