package dnsserver_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/switchyard-dev/switchyard/global-router/internal/dnsserver"
)

const localStackFile = `
zone: switchyard.test
ttl: 5s
defaultRegion: eu-west-1
regions:
  us-east-1: {ipv4: [127.0.1.1], ipv6: ["fd00::1"]}
  us-west-2: {ipv4: [127.0.2.1, 127.0.2.2]}
  eu-west-1: {ipv4: [127.0.3.1]}
clientRegions:
  127.0.0.0/8: us-east-1
rtt:
  us-east-1: {us-west-2: 70ms, eu-west-1: 80ms}
  us-west-2: {eu-west-1: 140ms}
`

func TestLoadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dns.yaml")
	if err := os.WriteFile(path, []byte(localStackFile), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := dnsserver.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := localStack(); !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadConfig =\n%+v\nwant\n%+v", got, want)
	}
	tests := []struct{ name, file string }{
		{"unknown field", localStackFile + "colour: blue\n"},
		{"unknown region field", "zone: z.test\ndefaultRegion: a\nregions: {a: {ipv4: [127.0.0.1], port: 53}}\n"},
		{"bad duration", "zone: z.test\nttl: 5\ndefaultRegion: a\nregions: {a: {ipv4: [127.0.0.1]}}\n"},
		{"bad address", "zone: z.test\ndefaultRegion: a\nregions: {a: {ipv4: [localhost]}}\n"},
		{"bad prefix", "zone: z.test\ndefaultRegion: a\nregions: {a: {ipv4: [127.0.0.1]}}\nclientRegions: {10/8: a}\n"},
		{"invalid config", "zone: z.test\ndefaultRegion: b\nregions: {a: {ipv4: [127.0.0.1]}}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := dnsserver.ParseConfig([]byte(tt.file)); !errors.Is(err, dnsserver.ErrInvalid) {
				t.Fatalf("ParseConfig = %v, want ErrInvalid", err)
			}
		})
	}
}
