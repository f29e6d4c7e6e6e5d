package openai

import (
	"fmt"
	"net/http"
)

// Paths of the OpenAI API that both tiers serve: the inference routes (POST, routed by the
// body) and the model list (GET).
const (
	PathCompletions     = "/v1/completions"
	PathChatCompletions = "/v1/chat/completions"
	PathEmbeddings      = "/v1/embeddings"
	PathResponses       = "/v1/responses"
	PathModels          = "/v1/models"
)

// InferencePaths are the paths both tiers route by the request body, POST only.
var InferencePaths = [...]string{PathCompletions, PathChatCompletions, PathEmbeddings, PathResponses}

// Bounds of the parts of a request line quoted in an error message.
const (
	maxQuotedPath   = 256
	maxQuotedMethod = 32
)

// NoRoute wraps mux so that a request it has no route for is answered with an OpenAI-style
// error instead of the mux's plain text: 404 ("Invalid URL (POST /v1/nope)", as OpenAI words
// it) for a path mux does not serve, 405 with mux's Allow header for a path it serves with
// other methods only. Both carry type invalid_request_error and a null code. observe, when not
// nil, is called with each such request and its status, for the front door to log and count.
// Requests mux has a route for (redirects to a canonical path included) go to mux untouched.
func NoRoute(mux *http.ServeMux, observe func(r *http.Request, status int)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		// The mux decides between 404 and 405 (and which methods to allow); its plain-text
		// body is dropped.
		rec := &statusRecorder{header: http.Header{}}
		mux.ServeHTTP(rec, r)
		e := &Error{Status: http.StatusNotFound, Type: TypeInvalidRequest,
			Message: fmt.Sprintf("Invalid URL (%s %s)", cut(r.Method, maxQuotedMethod), cut(r.URL.Path, maxQuotedPath))}
		if rec.status == http.StatusMethodNotAllowed {
			allow := rec.header.Get("Allow")
			e.Status = http.StatusMethodNotAllowed
			e.Message = fmt.Sprintf(
				"Method %s is not allowed on %s (allowed: %s)",
				cut(r.Method, maxQuotedMethod),
				cut(r.URL.Path, maxQuotedPath),
				allow,
			)
			w.Header().Set("Allow", allow)
		}
		if observe != nil {
			observe(r, e.Status)
		}
		e.Write(w)
	})
}

// cut is s as quoted in an error message: at most n bytes (the error's JSON replaces a rune cut
// in two).
func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// statusRecorder keeps the status and headers a handler writes and discards its body.
type statusRecorder struct {
	header http.Header
	status int
}

func (r *statusRecorder) Header() http.Header { return r.header }

func (r *statusRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *statusRecorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return len(p), nil
}
