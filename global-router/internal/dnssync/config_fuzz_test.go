package dnssync

import (
	"errors"
	"testing"
)

// FuzzParseConfig feeds arbitrary DNS-sync files: a refusal wraps ErrInvalid, and an accepted file
// validates, describes one owned record per region, and plans no change against its own records
// (a zone already in step is left alone).
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("hostedZoneID: /hostedzone/Z0SWITCHYARD\nrecordName: API.example.com\nttl: 60s\nperiod: 200ms\n" +
		"endpoint: http://127.0.0.1:4566\nmaxAttempts: 2\nregions:\n" +
		"  us-east-1: {values: [192.0.2.1, 192.0.2.2], healthCheckID: hc-use1}\n" +
		"  eu-west-1: {aliasDNSName: router.elb.amazonaws.com, aliasHostedZoneID: Z32O12XQLNTSW2, evaluateTargetHealth: true}\n"))
	f.Add(
		[]byte(
			`{"hostedZoneID":"Z1","recordName":"api.example.com.","recordType":"AAAA","regions":{"a":{"values":["2001:db8::1"]}}}`,
		),
	)
	f.Add(
		[]byte(
			"hostedZoneID: Z1\nrecordName: api.example.com\nrecordType: CNAME\nregions: {a: {values: [lb.example.com], awsRegion: eu-west-1}}\n",
		),
	)
	f.Add([]byte("hostedZoneID: Z1\nrecordName: api.example.com\nttl: 1500ms\nregions: {a: {values: [192.0.2.1]}}\n"))
	f.Add([]byte("hostedZoneID: Z1\nrecordName: x\nmaxAttempts: -1\nregions: {a: {values: [192.0.2.1]}}\n"))
	f.Add([]byte("hostedZoneID: Z1\nrecordName: x\nregions: {\"a b\": {values: [192.0.2.1]}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, cc, err := ParseConfig(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil || cc.MaxAttempts < 0 {
			t.Fatalf("accepted an invalid config: %v (maxAttempts %d)", err, cc.MaxAttempts)
		}
		want := cfg.desired(func(string) bool { return false })
		if len(want) != len(cfg.Targets) {
			t.Fatalf("%d records for %d regions", len(want), len(cfg.Targets))
		}
		for region, rs := range want {
			if !cfg.owned(rs) {
				t.Fatalf("record of %q is not owned by its own config: %+v", region, rs)
			}
		}
		if changes := plan(want, want); len(changes) != 0 {
			t.Fatalf("%d changes planned against records already in step", len(changes))
		}
	})
}
