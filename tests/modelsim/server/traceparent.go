package server

import "net/http"

// HeaderTraceparent is the response header in which modelsim echoes the W3C traceparent its
// request carried, so a test can check what trace the hop before it propagated (the gateway's
// upstream span, through the HTTP proxy or Envoy's header mutations).
const HeaderTraceparent = "X-Modelsim-Traceparent"

// maxTraceparent bounds the echoed value: a valid traceparent is 55 bytes.
const maxTraceparent = 128

// echoTraceparent records the request's traceparent in the answer's HeaderTraceparent.
func echoTraceparent(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if tp := r.Header.Get("Traceparent"); tp != "" && len(tp) <= maxTraceparent {
			w.Header().Set(HeaderTraceparent, tp)
		}
		h(w, r)
	}
}
