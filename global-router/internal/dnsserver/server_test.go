package dnsserver_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/global-router/internal/dnsserver"
)

// regions is a settable readiness and drain state, as the router's cluster table and config
// store supply them.
type regions struct {
	mu       sync.Mutex
	notReady map[string]bool
	drained  map[string]bool
}

func (r *regions) RegionReady(region string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.notReady[region]
}

func (r *regions) RegionDrained(region string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drained[region]
}

func (r *regions) set(notReady, drained []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notReady, r.drained = map[string]bool{}, map[string]bool{}
	for _, n := range notReady {
		r.notReady[n] = true
	}
	for _, n := range drained {
		r.drained[n] = true
	}
}

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

// localStack is the local stack's configuration: loopback clients are in us-east-1.
func localStack() dnsserver.Config {
	cfg := dnsserver.DefaultConfig()
	cfg.Zone = "switchyard.test"
	cfg.Regions = map[string]dnsserver.Region{
		"us-east-1": {IPv4: addrs("127.0.1.1"), IPv6: addrs("fd00::1")},
		"us-west-2": {IPv4: addrs("127.0.2.1", "127.0.2.2")},
		"eu-west-1": {IPv4: addrs("127.0.3.1")},
	}
	cfg.ClientRegions = map[netip.Prefix]string{netip.MustParsePrefix("127.0.0.0/8"): "us-east-1"}
	cfg.DefaultRegion = "eu-west-1"
	cfg.RTT = map[string]map[string]time.Duration{
		"us-east-1": {"us-west-2": 70 * time.Millisecond, "eu-west-1": 80 * time.Millisecond},
		"us-west-2": {"eu-west-1": 140 * time.Millisecond},
	}
	return cfg
}

// serve runs a responder on one loopback port over UDP and TCP and returns its address.
func serve(t *testing.T, cfg dnsserver.Config, state *regions, reg prometheus.Registerer) string {
	t.Helper()
	s, err := dnsserver.New(cfg, state, state, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	pc, l := listenBoth(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, pc, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
	})
	return pc.LocalAddr().String()
}

// listenBoth listens on one free loopback port over UDP and TCP.
func listenBoth(t *testing.T) (net.PacketConn, net.Listener) {
	t.Helper()
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, l
		}
		_ = pc.Close()
	}
	t.Fatal("no free port for both UDP and TCP")
	return nil, nil
}

// query asks name/qtype over network ("udp" or "tcp") with an optional client subnet.
func query(t *testing.T, network, addr, name string, qtype uint16, subnet string) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	if subnet != "" {
		p := netip.MustParsePrefix(subnet)
		m.SetEdns0(1232, false)
		m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1,
			SourceNetmask: uint8(p.Bits()), Address: p.Addr().AsSlice()})
	}
	c := &dns.Client{Net: network, Timeout: 10 * time.Second}
	resp, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s query %s: %v", network, name, err)
	}
	return resp
}

// answered returns the addresses of the response's answer section.
func answered(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			out = append(out, rr.A.String())
		case *dns.AAAA:
			out = append(out, rr.AAAA.String())
		}
	}
	return out
}

func TestAnswersNearestReadyRegion(t *testing.T) {
	state := &regions{}
	reg := prometheus.NewPedanticRegistry()
	addr := serve(t, localStack(), state, reg)
	tests := []struct {
		name              string
		notReady, drained []string
		qname             string
		qtype             uint16
		rcode             int
		want              []string
	}{
		{"own region", nil, nil, "api.switchyard.test", dns.TypeA, dns.RcodeSuccess, []string{"127.0.1.1"}},
		{"case-insensitive", nil, nil, "API.Switchyard.TEST", dns.TypeA, dns.RcodeSuccess, []string{"127.0.1.1"}},
		{"AAAA", nil, nil, "api.switchyard.test", dns.TypeAAAA, dns.RcodeSuccess, []string{"fd00::1"}},
		{
			"own drained: nearest",
			nil,
			[]string{"us-east-1"},
			"api.switchyard.test",
			dns.TypeA,
			dns.RcodeSuccess,
			[]string{"127.0.2.1", "127.0.2.2"},
		},
		{
			"own not ready: nearest",
			[]string{"us-east-1"},
			nil,
			"api.switchyard.test",
			dns.TypeA,
			dns.RcodeSuccess,
			[]string{"127.0.2.1", "127.0.2.2"},
		},
		{
			"two down: farthest",
			[]string{"us-west-2"},
			[]string{"us-east-1"},
			"api.switchyard.test",
			dns.TypeA,
			dns.RcodeSuccess,
			[]string{"127.0.3.1"},
		},
		{
			"none ready: nearest undrained",
			[]string{"us-east-1", "us-west-2", "eu-west-1"},
			[]string{"us-east-1"},
			"api.switchyard.test",
			dns.TypeA,
			dns.RcodeSuccess,
			[]string{"127.0.2.1", "127.0.2.2"},
		},
		{
			"AAAA without IPv6: no data",
			nil,
			[]string{"us-east-1"},
			"api.switchyard.test",
			dns.TypeAAAA,
			dns.RcodeSuccess,
			nil,
		},
		{"other name in zone", nil, nil, "www.switchyard.test", dns.TypeA, dns.RcodeNameError, nil},
		{"below the name", nil, nil, "x.api.switchyard.test", dns.TypeA, dns.RcodeNameError, nil},
		{"zone apex", nil, nil, "switchyard.test", dns.TypeA, dns.RcodeSuccess, nil},
		{"outside the zone", nil, nil, "example.com", dns.TypeA, dns.RcodeRefused, nil},
		{"suffix lookalike", nil, nil, "api.notswitchyard.test", dns.TypeA, dns.RcodeRefused, nil},
	}
	for _, tt := range tests {
		for _, network := range []string{"udp", "tcp"} {
			t.Run(tt.name+"/"+network, func(t *testing.T) {
				state.set(tt.notReady, tt.drained)
				resp := query(t, network, addr, tt.qname, tt.qtype, "")
				if resp.Rcode != tt.rcode || !slices.Equal(answered(resp), tt.want) {
					t.Fatalf("rcode %s answers %v; want %s %v", dns.RcodeToString[resp.Rcode], answered(resp),
						dns.RcodeToString[tt.rcode], tt.want)
				}
				checkAuthority(t, resp)
			})
		}
	}
	const want = `
# HELP switchyard_router_dns_answers_total Answers with router addresses, by the region answered.
# TYPE switchyard_router_dns_answers_total counter
switchyard_router_dns_answers_total{region="eu-west-1"} 2
switchyard_router_dns_answers_total{region="us-east-1"} 6
switchyard_router_dns_answers_total{region="us-west-2"} 6
# HELP switchyard_router_dns_failovers_total Answers that sent a client to a region other than its own because its own was drained or not ready.
# TYPE switchyard_router_dns_failovers_total counter
switchyard_router_dns_failovers_total 8
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "switchyard_router_dns_answers_total",
		"switchyard_router_dns_failovers_total"); err != nil {
		t.Error(err)
	}
}

// checkAuthority checks the authoritative bit, the short TTL and the SOA of negative answers.
func checkAuthority(t *testing.T, resp *dns.Msg) {
	t.Helper()
	if resp.Rcode == dns.RcodeRefused {
		if resp.Authoritative || len(resp.Answer)+len(resp.Ns) > 0 {
			t.Errorf("REFUSED response claims authority: %v", resp)
		}
		return
	}
	if !resp.Authoritative {
		t.Errorf("response is not authoritative")
	}
	for _, rr := range resp.Answer {
		if rr.Header().Ttl != 5 {
			t.Errorf("answer TTL = %d, want 5", rr.Header().Ttl)
		}
	}
	if len(resp.Answer) == 0 {
		soa, ok := firstSOA(resp.Ns)
		if !ok || soa.Minttl != 5 || soa.Hdr.Name != "switchyard.test." {
			t.Errorf("negative answer without the zone's SOA: %v", resp.Ns)
		}
	}
}

func firstSOA(rrs []dns.RR) (*dns.SOA, bool) {
	for _, rr := range rrs {
		if soa, ok := rr.(*dns.SOA); ok {
			return soa, true
		}
	}
	return nil, false
}

func TestClientRegionFromSubnetOrDefault(t *testing.T) {
	cfg := localStack()
	cfg.ClientRegions = map[netip.Prefix]string{
		netip.MustParsePrefix("10.1.0.0/16"):   "us-west-2",
		netip.MustParsePrefix("10.1.2.0/24"):   "us-east-1", // longer prefix wins
		netip.MustParsePrefix("2001:db8::/32"): "eu-west-1",
	}
	noSubnet := cfg
	noSubnet.UseClientSubnet = false
	tests := []struct {
		name   string
		cfg    dnsserver.Config
		subnet string
		want   []string
		scope  int // expected ECS scope in the response; -1: no ECS option
	}{
		{"subnet", cfg, "10.1.9.0/24", []string{"127.0.2.1", "127.0.2.2"}, 24},
		{"longest prefix", cfg, "10.1.2.0/24", []string{"127.0.1.1"}, 24},
		{"unknown subnet: default", cfg, "192.0.2.0/24", []string{"127.0.3.1"}, 24},
		{"no subnet: default", cfg, "", []string{"127.0.3.1"}, -1},
		{"subnet ignored when off", noSubnet, "10.1.9.0/24", []string{"127.0.3.1"}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := serve(t, tt.cfg, &regions{}, nil)
			resp := query(t, "udp", addr, "api.switchyard.test", dns.TypeA, tt.subnet)
			if !slices.Equal(answered(resp), tt.want) {
				t.Fatalf("answers %v, want %v", answered(resp), tt.want)
			}
			scope := -1
			if opt := resp.IsEdns0(); opt != nil {
				for _, o := range opt.Option {
					if e, ok := o.(*dns.EDNS0_SUBNET); ok {
						scope = int(e.SourceScope)
					}
				}
			}
			if scope != tt.scope {
				t.Fatalf("ECS scope %d, want %d", scope, tt.scope)
			}
		})
	}
}

// TestSourceNetworkBeatsSubnet: a client placed by its source address is answered for its
// region whatever subnet its resolver claims.
func TestSourceNetworkBeatsSubnet(t *testing.T) {
	cfg := localStack()
	cfg.ClientRegions[netip.MustParsePrefix("10.0.0.0/8")] = "eu-west-1"
	addr := serve(t, cfg, &regions{}, nil)
	resp := query(t, "tcp", addr, "api.switchyard.test", dns.TypeA, "10.1.0.0/16")
	if got := answered(resp); !slices.Equal(got, []string{"127.0.1.1"}) {
		t.Fatalf("answers %v, want us-east-1's", got)
	}
}

func TestRunListensOnUDPAndTCP(t *testing.T) {
	pc, l := listenBoth(t)
	addr := pc.LocalAddr().String()
	_, _ = pc.Close(), l.Close()
	cfg := localStack()
	cfg.Listen = addr
	s, err := dnsserver.New(cfg, dnsserver.ReadinessFunc(func(string) bool { return true }), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for _, network := range []string{"udp", "tcp"} {
		poll.UntilState(t, 10*time.Second, func() (bool, string) {
			m := new(dns.Msg).SetQuestion("api.switchyard.test.", dns.TypeA)
			resp, _, err := (&dns.Client{Net: network, Timeout: time.Second}).Exchange(m, addr)
			return err == nil && slices.Equal(answered(resp), []string{"127.0.1.1"}), fmt.Sprintf("%v %v", resp, err)
		}, network+" answer from Run")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
}
