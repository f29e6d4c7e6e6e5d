package dnsserver

import (
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func fuzzServer(t testing.TB) *Server {
	cfg := DefaultConfig()
	cfg.Zone = "switchyard.test"
	cfg.Regions = map[string]Region{
		"a": {IPv4: []netip.Addr{netip.MustParseAddr("127.0.1.1")}, IPv6: []netip.Addr{netip.MustParseAddr("fd00::1")}},
		"b": {IPv4: []netip.Addr{netip.MustParseAddr("127.0.2.1")}},
	}
	cfg.ClientRegions = map[netip.Prefix]string{netip.MustParsePrefix("10.0.0.0/8"): "b"}
	cfg.DefaultRegion = "a"
	cfg.RTT = map[string]map[string]time.Duration{"a": {"b": time.Millisecond}}
	s, err := New(cfg, ReadinessFunc(func(r string) bool { return r == "b" }), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzAnswer feeds raw packets through the handler path: whatever unpacks is answered with a
// response that packs, and nothing panics.
func FuzzAnswer(f *testing.F) {
	for _, q := range seedQueries() {
		b, err := q.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, []byte{127, 0, 0, 1})
	}
	f.Add([]byte{0, 1, 2}, []byte{10, 1, 2, 3})
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, raw, src []byte) {
		req := new(dns.Msg)
		if err := req.Unpack(raw); err != nil {
			return
		}
		addr, _ := netip.AddrFromSlice(src)
		resp := s.answer(req, addr)
		if resp.Id != req.Id || !resp.Response {
			t.Fatalf("response id %d response=%v for query id %d", resp.Id, resp.Response, req.Id)
		}
		resp.Truncate(udpSize(req))
		if _, err := resp.Pack(); err != nil {
			t.Fatalf("response does not pack: %v\n%v", err, resp)
		}
	})
}

func seedQueries() []*dns.Msg {
	a := new(dns.Msg).SetQuestion("api.switchyard.test.", dns.TypeA)
	aaaa := new(dns.Msg).SetQuestion("api.switchyard.test.", dns.TypeAAAA)
	other := new(dns.Msg).SetQuestion("x.switchyard.test.", dns.TypeTXT)
	out := new(dns.Msg).SetQuestion("example.com.", dns.TypeA)
	ecs := new(dns.Msg).SetQuestion("api.switchyard.test.", dns.TypeANY)
	ecs.SetEdns0(4096, true)
	ecs.IsEdns0().Option = append(
		ecs.IsEdns0().Option,
		&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: []byte{10, 1, 2, 0}},
	)
	notify := new(dns.Msg).SetNotify("switchyard.test.")
	empty := new(dns.Msg)
	return []*dns.Msg{a, aaaa, other, out, ecs, notify, empty}
}
