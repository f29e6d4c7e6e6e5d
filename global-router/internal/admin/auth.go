package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"connectrpc.com/connect"
)

// authInterceptor rejects calls, unary and streaming, that do not carry an accepted bearer token.
func (s *Server) authInterceptor() connect.Interceptor { return &authInterceptor{tokens: &s.tokens} }

// tokenSet holds the SHA-256 digests of the accepted tokens.
type tokenSet struct {
	digests [][sha256.Size]byte
}

// newTokenSet returns the digests of tokens; it refuses an empty set or an empty token.
func newTokenSet(tokens []string) (*tokenSet, error) {
	if len(tokens) == 0 {
		return nil, errors.New("admin: no token; the admin API is never served without a token")
	}
	ts := &tokenSet{digests: make([][sha256.Size]byte, len(tokens))}
	for i, t := range tokens {
		if t == "" || strings.TrimSpace(t) != t {
			return nil, fmt.Errorf("admin: token %d is empty or has surrounding whitespace", i+1)
		}
		ts.digests[i] = sha256.Sum256([]byte(t))
	}
	return ts, nil
}

// SetTokens replaces the accepted bearer tokens while the API serves: calls in flight finish,
// later calls must carry one of tokens. Accepting the old and the new token together for a while
// rotates the token without refusing a client that has not switched yet. It refuses an empty
// list or an empty token and then keeps the tokens in force. It is safe for concurrent use.
func (s *Server) SetTokens(tokens []string) error {
	ts, err := newTokenSet(tokens)
	if err != nil {
		return err
	}
	s.tokens.Store(ts)
	return nil
}

// requireToken refuses an AdminService request that carries no accepted token before its
// message is read, answering in the request's own protocol (gRPC, gRPC-Web or Connect), so a
// stranger cannot make the router buffer a request message. The interceptor checks every call
// again; requests in no protocol connect knows go through to the service's own error handling.
func (s *Server) requireToken(next http.Handler) http.Handler {
	auth := &authInterceptor{tokens: &s.tokens}
	ew := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := auth.check(r.Header); err != nil && ew.IsSupported(r) {
			s.metrics.count(r.URL.Path, err)
			_ = ew.Write(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type authInterceptor struct {
	tokens *atomic.Pointer[tokenSet]
}

func (a *authInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if err := a.check(req.Header()); err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}

func (a *authInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (a *authInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		if err := a.check(conn.RequestHeader()); err != nil {
			return err
		}
		return next(ctx, conn)
	}
}

// ValidToken reports whether token is one of the accepted admin tokens now, compared as every
// call's bearer token is (constant time, over SHA-256 digests). The capacity map's login and its
// sessions use it, so a token removed from the file ends the sessions opened with it.
func (s *Server) ValidToken(token string) bool {
	return (&authInterceptor{tokens: &s.tokens}).valid(token)
}

// check compares the presented token with every accepted one in constant time (over SHA-256
// digests, so the comparison reveals neither the token's length nor which token matched).
func (a *authInterceptor) check(h http.Header) error {
	presented, ok := bearer(h.Get("Authorization"))
	if !ok {
		return unauthenticated("missing bearer token (Authorization: Bearer <token>)")
	}
	if !a.valid(presented) {
		return unauthenticated("invalid bearer token")
	}
	return nil
}

// valid compares token with every accepted one in constant time, over SHA-256 digests.
func (a *authInterceptor) valid(token string) bool {
	digest := sha256.Sum256([]byte(token))
	match := 0
	for _, d := range a.tokens.Load().digests {
		match |= subtle.ConstantTimeCompare(digest[:], d[:])
	}
	return match == 1
}

// bearer extracts the token of an "Authorization: Bearer <token>" header value.
func bearer(v string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}
