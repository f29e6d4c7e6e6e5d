package proxy

import (
	"context"
	"io"
	"net"
	"net/http"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
)

// ServePlainBodies serves s on ln, as Serve does, with the inference routes reading request
// bodies the way the gateway did before its body path was hardened: io.ReadAll under the body
// limit, with no body budget, no read deadline and no bound on how far the buffer grows ahead of
// the bytes received. Everything after the read (routing, scheduling, forwarding) is the
// gateway's. It is the baseline of BenchmarkProxyBodyPath, which compares it side by side with
// the hardened path.
func (s *Server) ServePlainBodies(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	for _, p := range []string{"/v1/completions", "/v1/chat/completions", "/v1/embeddings"} {
		mux.HandleFunc("POST "+p, withTiming(s.servePlainBody))
	}
	return s.serve(ctx, ln, s.countActive(mux))
}

// servePlainBody is serveInference with the body read by io.ReadAll.
func (s *Server) servePlainBody(w http.ResponseWriter, r *http.Request) {
	limit := s.pipe.BodyOptions(r.ContentLength).Limit
	data, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	switch {
	case err != nil:
		apierror.BadRequest(err.Error(), "").Write(w)
		return
	case int64(len(data)) > limit:
		apierror.TooLarge(limit).Write(w)
		return
	}
	d, apiErr := s.pipe.Decide(r.Context(), data, headerGetter(r.Header), nil)
	if apiErr != nil {
		s.errorAnswer(w, r, apiErr)
		return
	}
	defer s.pipe.Done(d)
	s.forward(w, r, &payload{data: data}, d)
}
