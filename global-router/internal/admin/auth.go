package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"connectrpc.com/connect"
)

// authInterceptor rejects calls, unary and streaming, that do not carry the bearer token.
func (s *Server) authInterceptor() connect.Interceptor { return &authInterceptor{token: s.token} }

type authInterceptor struct {
	token [sha256.Size]byte
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

// check compares the presented token with the expected one in constant time (over SHA-256
// digests, so the comparison does not reveal the token's length either).
func (a *authInterceptor) check(h http.Header) error {
	presented, ok := bearer(h.Get("Authorization"))
	if !ok {
		return unauthenticated("missing bearer token (Authorization: Bearer <token>)")
	}
	digest := sha256.Sum256([]byte(presented))
	if subtle.ConstantTimeCompare(digest[:], a.token[:]) != 1 {
		return unauthenticated("invalid bearer token")
	}
	return nil
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
