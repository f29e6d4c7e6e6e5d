package ctl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"connectrpc.com/connect"

	"github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1/adminv1connect"
)

// caller makes the command's calls and prints their results.
type caller struct {
	inv *invocation
	out io.Writer
}

// client returns an admin API client for the invocation's address, protocol, token and TLS files.
func (c *caller) client() (adminv1connect.AdminServiceClient, error) {
	base, err := baseURL(c.inv.addr)
	if err != nil {
		return nil, usagef("--addr: %v", err)
	}
	token, err := readToken(c.inv.tokenFile)
	if err != nil {
		return nil, usagef("--token-file: %v", err)
	}
	hc, err := c.httpClient(base.Scheme)
	if err != nil {
		return nil, err
	}
	opts := []connect.ClientOption{connect.WithInterceptors(bearerToken(token))}
	switch c.inv.protocol {
	case "grpc":
		opts = append(opts, connect.WithGRPC())
	case "grpc-web":
		opts = append(opts, connect.WithGRPCWeb())
	}
	return adminv1connect.NewAdminServiceClient(hc, strings.TrimSuffix(base.String(), "/"), opts...), nil
}

// baseURL parses the admin address; a bare host:port means http://host:port.
func baseURL(addr string) (*url.URL, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http:// or https:// URL", addr)
	}
	return u, nil
}

// readToken returns the token in path with surrounding whitespace trimmed; "" when path is "".
func readToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return tok, nil
}

// httpClient returns a client for the scheme and protocol: gRPC over http:// needs h2c; the
// Connect protocol and gRPC-Web work over HTTP/1.1; https:// negotiates HTTP/2 by ALPN.
func (c *caller) httpClient(scheme string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Protocols = new(http.Protocols)
	switch {
	case scheme == "http" && c.inv.protocol == "grpc":
		tr.Protocols.SetUnencryptedHTTP2(true)
	case scheme == "http":
		tr.Protocols.SetHTTP1(true)
	default:
		tr.Protocols.SetHTTP1(true)
		tr.Protocols.SetHTTP2(true)
		cfg, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = cfg
	}
	return &http.Client{Transport: tr}, nil
}

// tlsConfig loads the optional CA bundle and client certificate.
func (c *caller) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.inv.caFile != "" {
		pem, err := os.ReadFile(c.inv.caFile)
		if err != nil {
			return nil, usagef("--ca-file: %v", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, usagef("--ca-file: %s holds no PEM certificate", c.inv.caFile)
		}
	}
	if (c.inv.certFile == "") != (c.inv.keyFile == "") {
		return nil, usagef("--cert-file and --key-file go together")
	}
	if c.inv.certFile != "" {
		cert, err := tls.LoadX509KeyPair(c.inv.certFile, c.inv.keyFile)
		if err != nil {
			return nil, usagef("client certificate: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// callCtx bounds one unary call by --timeout.
func (c *caller) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.inv.timeout)
}

// bearerToken is a client interceptor that sends the token (none when empty).
type bearerToken string

func (t bearerToken) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if t != "" {
			req.Header().Set("Authorization", "Bearer "+string(t))
		}
		return next(ctx, req)
	}
}

func (t bearerToken) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		if t != "" {
			conn.RequestHeader().Set("Authorization", "Bearer "+string(t))
		}
		return conn
	}
}

func (t bearerToken) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
