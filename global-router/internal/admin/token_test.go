package admin_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1/adminv1connect"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
)

// TestSetTokensRotates: a rotation accepts the old and the new token together, then only the
// new one, on unary and streaming calls alike; an invalid token list changes nothing.
func TestSetTokensRotates(t *testing.T) {
	e := newEnv(t)
	const newToken = "rotated-admin-token"
	client := func(token string) adminv1connect.AdminServiceClient {
		return adminv1connect.NewAdminServiceClient(e.Server.Client(), e.Server.URL, connect.WithGRPC(),
			connect.WithInterceptors(headerInterceptor("Bearer "+token)))
	}
	steps := []struct {
		name      string
		tokens    []string
		wantErr   bool
		oldAccept bool
		newAccept bool
	}{
		{"before rotation", nil, false, true, false},
		{"both during rotation", []string{newToken, admintest.Token}, false, true, true},
		{"old one retired", []string{newToken}, false, false, true},
		{"empty list refused", []string{}, true, false, true},
		{"empty token refused", []string{newToken, ""}, true, false, true},
		{"padded token refused", []string{" " + admintest.Token}, true, false, true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.tokens != nil {
				if err := e.Admin.SetTokens(s.tokens); (err != nil) != s.wantErr {
					t.Fatalf("SetTokens(%q) = %v, want error %v", s.tokens, err, s.wantErr)
				}
			}
			for _, c := range []struct {
				token  string
				accept bool
			}{{admintest.Token, s.oldAccept}, {newToken, s.newAccept}} {
				want := connect.CodeUnauthenticated
				if c.accept {
					want = 0
				}
				checkUnary(t, client(c.token), want)
				checkStream(t, client(c.token), want)
				if got := e.Admin.ValidToken(c.token); got != c.accept {
					t.Errorf("ValidToken(%q) = %v, want %v", c.token, got, c.accept)
				}
			}
		})
	}
}

// TestNoTokenRefusedBeforeTheBody: a call without the token is answered at once, without waiting
// for (or buffering) a request message that is still arriving.
func TestNoTokenRefusedBeforeTheBody(t *testing.T) {
	e := newEnv(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.Server.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// 1 MB announced, a few bytes sent, the rest never.
	req := "POST /switchyard.admin.v1.AdminService/ExplainRoute HTTP/1.1\r\nHost: x\r\n" +
		"Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{\"model\":\"m\",\"prompt\":\""
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer while the body is incomplete: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401 (Connect's unauthenticated)", resp.StatusCode)
	}
}
