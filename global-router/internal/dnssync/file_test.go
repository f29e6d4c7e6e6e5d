package dnssync_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/dnssync"
)

const exampleFile = `
hostedZoneID: /hostedzone/Z0SWITCHYARD
recordName: API.example.com
ttl: 60s
period: 200ms
endpoint: http://127.0.0.1:4566
maxAttempts: 2
regions:
  us-east-1: {values: [192.0.2.1, 192.0.2.2], healthCheckID: hc-use1}
  eu-west-1:
    aliasDNSName: router-euw1.elb.eu-west-1.amazonaws.com
    aliasHostedZoneID: Z32O12XQLNTSW2
    evaluateTargetHealth: true
`

func TestLoadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dns-sync.yaml")
	if err := os.WriteFile(path, []byte(exampleFile), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, cc, err := dnssync.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	want := testConfig()
	want.LeaderPoll, want.RetryMin, want.RetryMax = time.Second, time.Second, 2*time.Minute
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("config =\n%+v\nwant\n%+v", cfg, want)
	}
	if cc != (dnssync.ClientConfig{Endpoint: "http://127.0.0.1:4566", MaxAttempts: 2}) {
		t.Fatalf("client config = %+v", cc)
	}
	tests := []struct{ name, file string }{
		{"unknown field", exampleFile + "colour: blue\n"},
		{"unknown target field", "hostedZoneID: Z\nrecordName: a.b\nregions: {r: {values: [192.0.2.1], weight: 3}}\n"},
		{"numeric duration", "hostedZoneID: Z\nrecordName: a.b\nttl: 60\nregions: {r: {values: [192.0.2.1]}}\n"},
		{"invalid", "hostedZoneID: Z\nrecordName: a.b\nregions: {}\n"},
		{"negative attempts", "hostedZoneID: Z\nrecordName: a.b\nmaxAttempts: -1\nregions: {r: {values: [192.0.2.1]}}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := dnssync.ParseConfig([]byte(tt.file)); !errors.Is(err, dnssync.ErrInvalid) {
				t.Fatalf("ParseConfig = %v, want ErrInvalid", err)
			}
		})
	}
}
