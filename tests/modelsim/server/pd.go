package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
)

// PrefillerHeader is llm-d's header naming the prefill pod (host:port) to a decode pod.
const PrefillerHeader = "x-prefiller-host-port"

// PrefillerHeaderCanonical is the header's later spelling, which llm-d's routing sidecar reads
// when PrefillerHeader is absent; modelsim reads it the same way, so tests see what a client's
// value would do to a pod if a gateway let it through.
const PrefillerHeaderCanonical = "x-llm-d-prefiller-host-port"

// prefillPeer returns the prefill pod h names, as llm-d's sidecar reads it: PrefillerHeader,
// else PrefillerHeaderCanonical.
func prefillPeer(h http.Header) string {
	if peer := h.Get(PrefillerHeader); peer != "" {
		return peer
	}
	return h.Get(PrefillerHeaderCanonical)
}

// prefillTimeout bounds a remote prefill in real time (a prompt of the context length on the
// slowest profile, unscaled, takes well under it).
const prefillTimeout = 10 * time.Minute

// pdMetrics count the server's part in prefill/decode disaggregation.
type pdMetrics struct {
	remote    *prometheus.CounterVec // decode side, by result
	tokens    prometheus.Counter     // decode side: prompt tokens whose KV cache was pulled
	forRemote prometheus.Counter     // prefill side: requests with do_remote_decode
}

func newPDMetrics(reg prometheus.Registerer) (*pdMetrics, error) {
	m := &pdMetrics{
		remote: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "modelsim_remote_prefills_total",
			Help: "Requests that named a prefill pod (x-prefiller-host-port), by result: ok (prefilled there, " +
				"KV cache pulled), failed (answered 502), ignored (this server has the prefill role).",
		}, []string{"result"}),
		tokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "modelsim_kv_transfer_tokens_total",
			Help: "Prompt tokens whose KV cache this server pulled from a prefill pod.",
		}),
		forRemote: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "modelsim_remote_decode_prefills_total",
			Help: "Requests this server prefilled for a decode pod (kv_transfer_params.do_remote_decode).",
		}),
	}
	for _, c := range []prometheus.Collector{m.remote, m.tokens, m.forRemote} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	for _, r := range []string{"ok", "failed", "ignored"} {
		m.remote.WithLabelValues(r)
	}
	return m, nil
}

// remotePrefill does what llm-d's routing sidecar and vLLM's NIXL connector do for a decode
// server told of a prefill pod: it sends the request to peer with max_tokens 1, no streaming
// and kv_transfer_params.do_remote_decode (the prefill pod spends the prompt's compute), waits
// for the answer, then spends the KV transfer (prompt tokens × KVTransferPerToken) and marks
// ereq so the engine admits it with the prompt computed. A prefill server ignores the header.
func (s *Server) remotePrefill(r *http.Request, req *genRequest, peer string, ereq *engine.Request) *apiError {
	if s.cfg.Role == RolePrefill {
		s.pd.remote.WithLabelValues("ignored").Inc()
		return nil
	}
	if host, port, err := net.SplitHostPort(peer); err != nil || host == "" || port == "" {
		s.pd.remote.WithLabelValues("failed").Inc()
		return badRequest("", "Invalid %s header %q: want host:port.", PrefillerHeader, peer)
	}
	if apiErr := s.prefillAt(r, req, peer); apiErr != nil {
		s.pd.remote.WithLabelValues("failed").Inc()
		return apiErr
	}
	if err := s.clock.Sleep(r.Context(), time.Duration(ereq.PromptTokens)*s.cfg.KVTransferPerToken); err != nil {
		return &apiError{status: 499, kind: "ClientClosedRequest", message: "client went away"}
	}
	ereq.RemoteKV = true
	s.pd.remote.WithLabelValues("ok").Inc()
	s.pd.tokens.Add(float64(ereq.PromptTokens))
	return nil
}

// prefillAt sends req's prefill to peer and waits for its answer.
func (s *Server) prefillAt(r *http.Request, req *genRequest, peer string) *apiError {
	body, err := prefillBody(req.raw)
	if err != nil {
		return badRequest("", "Cannot build the prefill request: %v", err)
	}
	out, err := http.NewRequestWithContext(r.Context(), http.MethodPost, "http://"+peer+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		return badRequest("", "Invalid %s header %q: %v", PrefillerHeader, peer, err)
	}
	out.Header.Set("Content-Type", "application/json")
	resp, err := s.prefillClient.Do(out)
	if err != nil {
		return &apiError{status: http.StatusBadGateway, kind: "PrefillError",
			message: fmt.Sprintf("Remote prefill at %s failed: %v", peer, err)}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return &apiError{status: http.StatusBadGateway, kind: "PrefillError",
			message: fmt.Sprintf("Remote prefill at %s answered %d", peer, resp.StatusCode)}
	}
	return nil
}

// prefillBody is body with max_tokens 1, no streaming and kv_transfer_params asking for a
// remote decode, as llm-d's sidecar sends it to the prefill pod.
func prefillBody(body []byte) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, err
	}
	delete(fields, "max_completion_tokens")
	delete(fields, "stream_options")
	fields["max_tokens"] = json.RawMessage("1")
	fields["stream"] = json.RawMessage("false")
	fields["kv_transfer_params"] = json.RawMessage(
		`{"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null,"remote_host":null,"remote_port":null}`)
	return json.Marshal(fields)
}
