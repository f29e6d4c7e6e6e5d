package dnsserver

import (
	"net/netip"

	"github.com/miekg/dns"
)

// clientSubnet returns the address of the EDNS client subnet option of req, when UseClientSubnet
// is on and the option is well formed; else the zero Addr.
func (s *Server) clientSubnet(req *dns.Msg) netip.Addr {
	if ecs := findSubnet(req.IsEdns0()); ecs != nil && s.cfg.UseClientSubnet {
		if a, ok := netip.AddrFromSlice(ecs.Address); ok {
			return a.Unmap()
		}
	}
	return netip.Addr{}
}

// subnetEcho returns the client subnet option for the response (RFC 7871): the query's, with
// the scope of the answer: the source prefix when the subnet placed the client, 0 when it
// did not matter. Nil when the query carried none or it is not used.
func (s *Server) subnetEcho(opt *dns.OPT, src netip.Addr) *dns.EDNS0_SUBNET {
	ecs := findSubnet(opt)
	if ecs == nil || !s.cfg.UseClientSubnet {
		return nil
	}
	out := *ecs
	out.SourceScope = 0
	if _, bySource := s.regionOf(src); !bySource {
		out.SourceScope = ecs.SourceNetmask
	}
	return &out
}

func findSubnet(opt *dns.OPT) *dns.EDNS0_SUBNET {
	if opt == nil {
		return nil
	}
	for _, o := range opt.Option {
		if e, ok := o.(*dns.EDNS0_SUBNET); ok {
			return e
		}
	}
	return nil
}
