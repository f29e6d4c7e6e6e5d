package dnsserver

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// clientNet maps a client network to its region.
type clientNet struct {
	prefix netip.Prefix
	region string
}

// clientNets returns the mapping, longest prefix first.
func clientNets(m map[netip.Prefix]string) []clientNet {
	out := make([]clientNet, 0, len(m))
	for p, r := range m {
		out = append(out, clientNet{prefix: p.Masked(), region: r})
	}
	slices.SortFunc(out, func(a, b clientNet) int {
		return cmp.Or(cmp.Compare(b.prefix.Bits(), a.prefix.Bits()), cmp.Compare(a.prefix.String(), b.prefix.String()))
	})
	return out
}

// regionOf returns the region of the network holding a; ok is false when none does.
func (s *Server) regionOf(a netip.Addr) (string, bool) {
	a = a.Unmap()
	for _, c := range s.clients {
		if c.prefix.Contains(a) {
			return c.region, true
		}
	}
	return "", false
}

// answer builds the response to req from the client address src.
func (s *Server) answer(req *dns.Msg, src netip.Addr) *dns.Msg {
	resp := new(dns.Msg)
	switch {
	case req.Opcode != dns.OpcodeQuery:
		resp.SetRcode(req, dns.RcodeNotImplemented)
	case len(req.Question) != 1:
		resp.SetRcode(req, dns.RcodeFormatError)
	case req.Question[0].Qclass != dns.ClassINET && req.Question[0].Qclass != dns.ClassANY:
		resp.SetRcode(req, dns.RcodeRefused)
	default:
		resp.SetReply(req)
		s.answerQuestion(resp, req, src)
	}
	resp.RecursionAvailable = false
	if opt := req.IsEdns0(); opt != nil && resp.Rcode != dns.RcodeFormatError {
		resp.SetEdns0(dns.DefaultMsgSize, false)
		if ecs := s.subnetEcho(opt, src); ecs != nil {
			resp.IsEdns0().Option = append(resp.IsEdns0().Option, ecs)
		}
	}
	s.metrics.responses.WithLabelValues(dns.RcodeToString[resp.Rcode]).Inc()
	return resp
}

// answerQuestion fills resp for its one question.
func (s *Server) answerQuestion(resp, req *dns.Msg, src netip.Addr) {
	q := req.Question[0]
	qname := strings.ToLower(q.Name)
	if !dns.IsSubDomain(s.zone, qname) {
		resp.Rcode = dns.RcodeRefused
		return
	}
	resp.Authoritative = true
	switch {
	case qname == s.name:
		s.answerName(resp, req, q.Qtype, src)
	case qname == s.zone && q.Qtype == dns.TypeSOA:
		resp.Answer = append(resp.Answer, s.soa())
	case qname == s.zone:
		resp.Ns = append(resp.Ns, s.soa()) // no data of this type at the apex
	default:
		resp.Rcode = dns.RcodeNameError
		resp.Ns = append(resp.Ns, s.soa())
	}
}

// answerName answers a query for the regional name: the nearest ready region's addresses.
func (s *Server) answerName(resp, req *dns.Msg, qtype uint16, src netip.Addr) {
	client := s.clientRegion(req, src)
	region := s.pick(client)
	var rrs []dns.RR
	hdr := dns.RR_Header{Name: req.Question[0].Name, Class: dns.ClassINET, Ttl: s.ttl}
	if qtype == dns.TypeA || qtype == dns.TypeANY {
		for _, a := range s.cfg.Regions[region].IPv4 {
			h := hdr
			h.Rrtype = dns.TypeA
			rrs = append(rrs, &dns.A{Hdr: h, A: a.AsSlice()})
		}
	}
	if qtype == dns.TypeAAAA || qtype == dns.TypeANY {
		for _, a := range s.cfg.Regions[region].IPv6 {
			h := hdr
			h.Rrtype = dns.TypeAAAA
			rrs = append(rrs, &dns.AAAA{Hdr: h, AAAA: a.AsSlice()})
		}
	}
	if len(rrs) == 0 {
		resp.Ns = append(resp.Ns, s.soa()) // NODATA
		return
	}
	resp.Answer = rrs
	s.metrics.answers.WithLabelValues(region).Inc()
	if region != client {
		s.metrics.failovers.Inc()
	}
	s.logger.Debug(
		"dns answer",
		"client",
		src.String(),
		"client_region",
		client,
		"region",
		region,
		"qtype",
		dns.TypeToString[qtype],
	)
}

// clientRegion places the client: its source network, else its resolver's EDNS client subnet,
// else the default region.
func (s *Server) clientRegion(req *dns.Msg, src netip.Addr) string {
	if r, ok := s.regionOf(src); ok {
		return r
	}
	if ecs := s.clientSubnet(req); ecs.IsValid() {
		if r, ok := s.regionOf(ecs); ok {
			return r
		}
	}
	return s.cfg.DefaultRegion
}

// pick returns the region to answer for a client of region client: the nearest that is ready
// and not drained. When none is, it fails open (as Route 53 does when every health check
// fails): the nearest that is not drained, else the client's own.
func (s *Server) pick(client string) string {
	prefs := s.prefs[client]
	for _, r := range prefs {
		if !s.drains.RegionDrained(r) && s.ready.RegionReady(r) {
			return r
		}
	}
	for _, r := range prefs {
		if !s.drains.RegionDrained(r) {
			return r
		}
	}
	return client
}

// soa is the zone's SOA record, also sent with negative answers (its minimum is the TTL).
func (s *Server) soa() dns.RR {
	return &dns.SOA{
		Hdr: dns.RR_Header{Name: s.zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: s.ttl},
		Ns:  "ns." + s.zone, Mbox: "hostmaster." + s.zone,
		Serial: 1, Refresh: 3600, Retry: 600, Expire: 86400, Minttl: s.ttl,
	}
}
