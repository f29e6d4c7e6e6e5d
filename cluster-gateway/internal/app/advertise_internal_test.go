package app

import (
	"os"
	"testing"
)

func TestAdvertiseURL(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name:", err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"given", Config{AdvertiseURL: "https://gw.example:8443", Listen: ":8080"}, "https://gw.example:8443"},
		{"listen address", Config{Listen: "10.0.0.7:8080"}, "http://10.0.0.7:8080"},
		{"every interface", Config{Listen: ":8080"}, "http://" + host + ":8080"},
		{"TLS", Config{Listen: "10.0.0.7:8443", TLSCertFile: "tls.crt", TLSKeyFile: "tls.key"}, "https://10.0.0.7:8443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (&Gateway{cfg: tc.cfg}).advertiseURL(); got != tc.want {
				t.Fatalf("advertiseURL() = %q, want %q", got, tc.want)
			}
		})
	}
}
