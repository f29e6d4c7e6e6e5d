package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

// TestGracefulShutdown sends SIGTERM to a gateway, and to a router, while long streams run through
// it: every stream already running completes with [DONE], a new request during the drain gets a
// retryable answer (503 with Retry-After, or a refused connection once the listener is closed),
// and the process exits with status 0.
func TestGracefulShutdown(t *testing.T) {
	for _, tier := range []string{"gateway", "router"} {
		t.Run(tier, func(t *testing.T) {
			w := newWorld(t)
			w.TimeScale = 1 // real-time streams, so they are still running when the signal arrives
			pod := w.Pod("h100")
			victim := w.Gateway("east-a", "us-east-1", []string{pod.Listen})
			if tier == "router" {
				victim = w.Router("us-east-1", "")
			}
			shutdownDuringStreams(t, victim)
		})
	}
}

// shutdownStreams is how many long streams run when the signal arrives, and shutdownTokens how
// many tokens each asks for (several seconds of real-time decoding).
const (
	shutdownStreams = 4
	shutdownTokens  = 400
)

// streamResult is how one stream ended.
type streamResult struct {
	events int
	done   bool
	ended  time.Time
	err    error
}

func shutdownDuringStreams(t *testing.T, n *node) {
	url := "http://" + n.Listen + "/v1/completions"
	servesCompletion(n.Listen)(t) // healthy is not yet ready: wait for a served request
	started := make(chan struct{}, shutdownStreams)
	results := make(chan streamResult, shutdownStreams)
	var running atomic.Int64
	running.Add(shutdownStreams)
	for range shutdownStreams {
		go func() {
			r := stream(url, started)
			running.Add(-1)
			results <- r
		}()
	}
	for range shutdownStreams {
		select {
		case <-started:
		case r := <-results:
			t.Fatalf("a stream ended before its first token: %v\n%s", r.err, n.Log())
		case <-time.After(60 * time.Second):
			t.Fatal("streams did not start within 60 s")
		}
	}
	signalled := time.Now()
	if err := n.Proc().Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGTERM sent with %d streams running", shutdownStreams)
	probeDrain(t, url, &running)

	for range shutdownStreams {
		select {
		case r := <-results:
			if !r.done || r.err != nil {
				t.Errorf("in-flight stream cut by the shutdown: %d events, [DONE]=%v, err %v", r.events, r.done, r.err)
			}
			if !r.ended.After(signalled) {
				t.Errorf("a stream ended before the signal: the scenario did not test draining")
			}
		case <-time.After(90 * time.Second):
			t.Fatalf("in-flight streams did not finish within 90 s of SIGTERM\n%s", n.Log())
		}
	}
	select {
	case <-n.Proc().Exited():
		if err := n.Proc().Wait(); err != nil {
			t.Errorf("exit after SIGTERM: %v, want status 0\n%s", err, n.Log())
		}
		t.Logf("exited %v after SIGTERM", time.Since(signalled).Round(100*time.Millisecond))
	case <-time.After(exitBound):
		// The drain timeout is 30 s: a process that waits it out although its streams are done
		// (or hangs) fails here.
		t.Fatalf("process still running %v after its streams finished\n%s", exitBound, n.Log())
	}
}

// exitBound is how long a process may take to exit once its last stream has ended: generous for a
// loaded machine, shorter than the 30 s drain timeout.
const exitBound = 20 * time.Second

// probeDrain sends new requests, each on a new connection, until one gets a retryable refusal: 503
// with Retry-After and Connection: close while streams still run (the listener stays open), or a
// refused connection once they have all ended. Requests the process took before it saw the
// signal may succeed; any other answer fails the test.
func probeDrain(t *testing.T, url string, running *atomic.Int64) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	refused := poll.Within(10*time.Second, func() bool {
		resp, err := client.Post(url, "application/json", strings.NewReader(completionBody(1)))
		switch {
		case errors.Is(err, syscall.ECONNREFUSED) && running.Load() == 0:
			t.Logf("new request after the streams ended: connection refused")
			return true
		case err != nil:
			t.Fatalf(
				"new request during the drain, %d streams running: %v (want 503 with Retry-After on the open listener)",
				running.Load(),
				err,
			)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
			if !resp.Close {
				t.Errorf("503 during the drain without Connection: close")
			}
			t.Logf("new request during the drain: 503, Retry-After %s: %s", resp.Header.Get("Retry-After"), b)
			return true
		case resp.StatusCode != http.StatusOK:
			t.Fatalf("new request during the drain: %d (Retry-After %q) %s; want 503 with Retry-After or a refused connection",
				resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
		return false
	})
	if !refused {
		t.Fatal("new requests were still served 10 s after SIGTERM")
	}
}

// stream sends one long streamed completion, signals started at its first token, and reads it to
// the end.
func stream(url string, started chan<- struct{}) streamResult {
	body := sprintf(`{"model":%q,"prompt":"Tell me a long story","max_tokens":%d,"stream":true,"ignore_eos":true}`,
		testModel, shutdownTokens)
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return streamResult{err: err, ended: time.Now()}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return streamResult{err: fmt.Errorf("status %d: %s", resp.StatusCode, b), ended: time.Now()}
	}
	var r streamResult
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "data: [DONE]":
			r.done = true
		case strings.HasPrefix(line, "data: "):
			if r.events == 0 {
				started <- struct{}{}
			}
			r.events++
			if strings.Contains(line, `"error"`) {
				r.err = errors.New(line)
			}
		}
	}
	if r.err == nil {
		r.err = sc.Err()
	}
	r.ended = time.Now()
	return r
}
