package dnsserver

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/miekg/dns"
)

// FuzzParseConfig feeds arbitrary responder files: a refusal wraps ErrInvalid, and a file that is
// accepted builds a server whose answer for its name packs and names only configured routers.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("zone: switchyard.test\nttl: 5s\ndefaultRegion: eu-west-1\n" +
		"regions:\n  us-east-1: {ipv4: [127.0.1.1], ipv6: [\"fd00::1\"]}\n  eu-west-1: {ipv4: [127.0.3.1]}\n" +
		"clientRegions:\n  127.0.0.0/8: us-east-1\nrtt:\n  us-east-1: {eu-west-1: 80ms}\n"))
	f.Add(
		[]byte(
			`{"zone":"z.test","name":"Api.Z.test.","defaultRegion":"a","useClientSubnet":false,"regions":{"a":{"ipv4":["10.0.0.1"]}}}`,
		),
	)
	f.Add([]byte("zone: z.test\nttl: 1500ms\ndefaultRegion: a\nregions: {a: {ipv4: [127.0.0.1]}}\n"))
	f.Add([]byte("zone: z.test\ndefaultRegion: a\nregions: {a: {ipv4: [\"::ffff:127.0.0.1\"]}}\n"))
	f.Add([]byte("zone: z.test\ndefaultRegion: a\nregions: {a: {ipv4: [127.0.0.1]}}\nrtt: {a: {b: 1s}}\n"))
	f.Add([]byte("zone: .\ndefaultRegion: a\nregions: {a: {ipv4: [127.0.0.1]}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		s, err := New(cfg, ReadinessFunc(func(string) bool { return true }), nil, nil, nil)
		if err != nil {
			t.Fatalf("accepted config does not build a server: %v", err)
		}
		var routers []netip.Addr
		for _, r := range cfg.Regions {
			routers = append(routers, r.IPv4...)
		}
		req := new(dns.Msg).SetQuestion(dns.Fqdn(cfg.name()), dns.TypeA)
		resp := s.answer(req, netip.MustParseAddr("127.0.0.1"))
		if _, err := resp.Pack(); err != nil {
			t.Fatalf("answer does not pack: %v\n%v", err, resp)
		}
		if len(resp.Answer) == 0 {
			t.Fatalf("no answer for %s with every region ready:\n%v", cfg.name(), resp)
		}
		for _, rr := range resp.Answer {
			a, ok := rr.(*dns.A)
			if !ok {
				t.Fatalf("answer %v is not an A record", rr)
			}
			if ip, _ := netip.AddrFromSlice(a.A); !slices.Contains(routers, ip.Unmap()) {
				t.Fatalf("answer %v names no configured router %v", rr, routers)
			}
		}
	})
}
